package server_test

import (
	"fmt"

	"flrh.dev/flrh/server"
)

func ExampleParseTokens() {
	tokens, err := server.ParseTokens([]byte(`{"tokens":[
		{"actor":"alice","roles":["approver"],"token":"correct-horse-battery-staple"},
		{"actor":"ci-bot","roles":["agent"],"token_sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}
	]}`))
	fmt.Println(tokens.Len(), err)
	fmt.Println(server.ListenCheck("0.0.0.0:7700", tokens.Len() > 0))
	fmt.Println(server.ListenCheck("0.0.0.0:7700", false))
	// Output:
	// 2 <nil>
	// <nil>
	// refusing to listen on "0.0.0.0:7700" without a token file or an identity provider: only loopback addresses may be served unauthenticated
}
