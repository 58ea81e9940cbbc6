module flrh.dev/flrh/bench

go 1.26.0

require flrh.dev/flrh v0.0.0

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/text v0.44.0 // indirect
)

replace flrh.dev/flrh => ../
