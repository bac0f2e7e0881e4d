package rlockotel_test

import (
	"testing"

	"github.com/rlock/rlock/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
