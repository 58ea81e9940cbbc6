package server

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
)

//go:embed openapi.json
var openAPIDoc []byte

// bodySchemaNames maps each request schema to its name in the OpenAPI
// document's components.
var bodySchemaNames = map[string]string{
	"start_run":     "StartRun",
	"submit_input":  "SubmitInput",
	"approve":       "Approve",
	"deny":          "Deny",
	"cancel":        "Cancel",
	"reconcile":     "Reconcile",
	"release":       "Release",
	"choose":        "Choose",
	"mrp":           "MRPTransition",
	"login_token":   "LoginToken",
	"login_refresh": "LoginRefresh",
	"backfill":      "Backfill",
	"pause":         "Pause",
}

// OpenAPI returns the API's OpenAPI 3.1 document: the hand-written
// description of paths and answers, with the request body schemas taken
// from the very schemas the server validates against, so they cannot drift.
var OpenAPI = sync.OnceValues(func() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	if schemas == nil {
		return nil, fmt.Errorf("openapi.json: no components.schemas")
	}
	for _, file := range requestSchemas {
		name, ok := bodySchemaNames[file]
		if !ok {
			continue
		}
		var s map[string]any
		if err := json.Unmarshal(Schema(file), &s); err != nil {
			return nil, fmt.Errorf("schema %s: %w", file, err)
		}
		delete(s, "$schema")
		delete(s, "$id")
		schemas[name] = s
	}
	return json.MarshalIndent(doc, "", "  ")
})

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request, _ Principal) error {
	if err := checkQuery(r.URL.Query()); err != nil {
		return err
	}
	doc, err := OpenAPI()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	w.Write(doc)
	return nil
}
