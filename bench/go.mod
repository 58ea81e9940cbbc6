module flrh.dev/flrh/bench

go 1.26.0

require flrh.dev/flrh v0.0.0

replace flrh.dev/flrh => ../
