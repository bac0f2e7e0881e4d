package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadHistoryLeavesOutATornOp: a process killed while it wrote an op
// leaves part of it at the end of its history (seen once in CI, in
// TestReliabilityHolderKilled/fixed-lease: "unexpected EOF"). readHistory
// reads the whole ops before it, and a call whose completion was torn
// off counts as one that never returned.
func TestReadHistoryLeavesOutATornOp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c0.jsonl")
	rec, err := createRecorder(path)
	require.NoError(t, err)
	rec.add(Op{Kind: opKill, Proc: "p", Start: 1, End: 2})
	call := rec.invoke(Op{Kind: opAcquire, Proc: "c0", Owner: "c0.w1.1"})
	require.NoError(t, rec.Close())
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"kind":"acquire","proc":"c0","call":` + "1") // the completion, torn
	require.NoError(t, err)
	require.NoError(t, f.Close())

	ops, err := readHistory(path)
	require.NoError(t, err)
	require.Len(t, ops, 2)
	assert.Equal(t, opKill, ops[0].Kind)
	assert.Equal(t, call.Call, ops[1].Call)
	assert.True(t, ops[1].Unfinished, "the call whose completion was torn off never returned")
	assert.Equal(t, outUnknown, ops[1].Outcome)
}
