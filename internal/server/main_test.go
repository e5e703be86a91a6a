package server

import (
	"testing"

	"github.com/nebulactrl/nebula/internal/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
