package seam

import (
	"flrh.dev/flrh/cjson"
	"flrh.dev/flrh/frontier"
)

func (p *Projection) appendCommand(b []byte) []byte {
	if p.Command == nil {
		return append(b, "null"...)
	}
	return frontier.AppendDeltaBatch(b, p.Command)
}

func (p *Projection) appendVerdicts(b []byte) []byte {
	b = append(b, '[')
	for i, v := range p.Verdicts {
		if i > 0 {
			b = append(b, ',')
		}
		b = v.AppendCanonical(b)
	}
	return append(b, ']')
}

// appendPreimage writes the LRProjectionPreimage.
func (p *Projection) appendPreimage(b []byte) []byte { return p.appendPreimageBatch(b, nil) }

// appendPreimageBatch is appendPreimage with the query batch digest
// written from batch, its spelling, when batch is not nil (a digest needs
// no escape), in place of the projection's QueryBatchDigest.
func (p *Projection) appendPreimageBatch(b, batch []byte) []byte {
	b = append(b, `{"binding_profile_digest":`...)
	b = cjson.AppendString(b, p.BindingProfileDigest)
	b = append(b, `,"command":`...)
	b = p.appendCommand(b)
	b = append(b, `,"contract_version":`...)
	b = cjson.AppendString(b, ContractVersion)
	b = append(b, `,"kind":"LRProjectionPreimage","l_fixpoint_digest":`...)
	b = cjson.AppendString(b, p.LFixpointDigest)
	b = append(b, `,"l_materialization_digest":`...)
	b = cjson.AppendString(b, p.LMaterializationDigest)
	b = append(b, `,"logical_time":`...)
	b = cjson.AppendInt(b, p.LogicalTime)
	b = append(b, `,"ordered_verdicts":`...)
	b = p.appendVerdicts(b)
	b = append(b, `,"query_batch_digest":`...)
	if batch != nil {
		b = append(append(append(b, '"'), batch...), '"')
	} else {
		b = cjson.AppendString(b, p.QueryBatchDigest)
	}
	b = append(b, `,"r_profile_digest":`...)
	b = cjson.AppendString(b, p.RProfileDigest)
	return append(b, '}')
}

// MarshalJSON writes the canonical LRProjectionResult.
func (p *Projection) MarshalJSON() ([]byte, error) { return p.AppendCanonical(nil), nil }

// AppendCanonical appends the canonical LRProjectionResult bytes to b.
func (p *Projection) AppendCanonical(b []byte) []byte {
	b = append(b, `{"binding_profile_digest":`...)
	b = cjson.AppendString(b, p.BindingProfileDigest)
	b = append(b, `,"command":`...)
	b = p.appendCommand(b)
	b = append(b, `,"contract_version":`...)
	b = cjson.AppendString(b, ContractVersion)
	b = append(b, `,"kind":"LRProjectionResult","l_fixpoint_digest":`...)
	b = cjson.AppendString(b, p.LFixpointDigest)
	b = append(b, `,"l_materialization_digest":`...)
	b = cjson.AppendString(b, p.LMaterializationDigest)
	b = append(b, `,"logical_time":`...)
	b = cjson.AppendInt(b, p.LogicalTime)
	b = append(b, `,"projection_digest":`...)
	b = cjson.AppendString(b, p.Digest)
	b = append(b, `,"query_batch_digest":`...)
	b = cjson.AppendString(b, p.QueryBatchDigest)
	b = append(b, `,"r_profile_digest":`...)
	b = cjson.AppendString(b, p.RProfileDigest)
	b = append(b, `,"schema_version":`...)
	b = cjson.AppendString(b, ResultSchema)
	b = append(b, `,"verdicts":`...)
	b = p.appendVerdicts(b)
	return append(b, '}')
}
