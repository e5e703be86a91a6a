package apitest

import (
	"testing"

	"github.com/nebulactrl/nebula/internal/store/pgtest"
)

// TestMain stops the PostgreSQL server pgtest starts, once every test is done.
func TestMain(m *testing.M) { pgtest.Main(m) }
