package gid

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/nebulactrl/nebula/internal/model"
)

// The ids the API writes are base64url of "Kind:raw", as JSON strings,
// whichever writer they are written to and however long the raw id is.
func TestMarshalWritesTheEncodedID(t *testing.T) {
	raws := []string{"0190f1c2-aaaa-7bbb-8ccc-0123456789ab", "x", strings.Repeat("long-", 24), "ü:ß/+"}
	for _, raw := range raws {
		want := strconv.Quote(base64.RawURLEncoding.EncodeToString([]byte(Environment + ":" + raw)))
		var buf bytes.Buffer
		MarshalEnvironmentID(model.EnvironmentID(raw)).MarshalGQL(&buf)
		if buf.String() != want {
			t.Errorf("into a bytes.Buffer: got %s for %q, want %s", buf.String(), raw, want)
		}
		var sb strings.Builder
		MarshalEnvironmentID(model.EnvironmentID(raw)).MarshalGQL(&sb)
		if sb.String() != want {
			t.Errorf("into a strings.Builder: got %s for %q, want %s", sb.String(), raw, want)
		}
		id := Encode(Environment, raw)
		if strconv.Quote(id) != want {
			t.Errorf("Encode(%q) = %s, want %s", raw, id, want)
		}
		back, err := Decode[model.EnvironmentID](Environment, id)
		if err != nil || string(back) != raw {
			t.Errorf("Decode(Encode(%q)) = %q, %v", raw, back, err)
		}
	}
}

// An id written into a buffer with room allocates nothing: a response
// writes one per object.
func TestWriteQuotedIntoABufferAllocatesNothing(t *testing.T) {
	var buf bytes.Buffer
	buf.Grow(1 << 16)
	allocs := testing.AllocsPerRun(100, func() {
		if buf.Len() > 1<<15 {
			buf.Reset()
		}
		writeQuoted(&buf, Deployment, "0190f1c2-aaaa-7bbb-8ccc-0123456789ab")
	})
	if allocs != 0 {
		t.Errorf("writing an id allocated %.1f times, want 0", allocs)
	}
}
