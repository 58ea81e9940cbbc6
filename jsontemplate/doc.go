// Package jsontemplate makes JSON values of JSON documents: a run's input
// of a webhook's delivery, a scheduled run's of the time it is due. A
// Template is JSON whose strings name a document's parts by JSON pointer
// and named values in braces; a Condition tests a document's value at a
// pointer; Decode reads a document with one meaning (no member named
// twice, numbers exact).
//
// It is pure: values in, values out.
package jsontemplate
