package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/rlock/rlock/rlock"
	"github.com/rlock/rlock/rlock/rlockotel"
)

// BenchmarkHooks measures what observing the locks costs an uncontended
// Lock+Unlock (one goroutine, as LockUnlock in BenchmarkCompare), in one
// run against one Redis:
//
//	off          no hooks, the default
//	nop          rlock.NopHooks: the engine's side of the hooks alone
//	otel         rlockotel on the OpenTelemetry SDK: every span sampled and
//	             handed to a batch span processor (a no-op exporter), every
//	             metric kept for a manual reader, lock names normalised
//	interleaved  off and otel taking turns cycle by cycle, so that both
//	             meet the same noise of a shared machine: wall and CPU
//	             time per cycle of each, and otel's overhead in percent
//	interleaved-metrics  the same with metrics only (a no-op tracer)
//
// The first three report allocations per cycle; their times are only
// comparable on a quiet machine. interleaved is the one to read for time:
//
//	go test ./integration -run '^$' -bench Hooks -benchtime 3s -count 3
func BenchmarkHooks(b *testing.B) {
	node := benchNode(b)
	b.Run("off", func(b *testing.B) { cycles(b, hookedLocker(b, node.Addr(), nil)) })
	b.Run("nop", func(b *testing.B) { cycles(b, hookedLocker(b, node.Addr(), rlock.NopHooks{})) })
	b.Run("otel", func(b *testing.B) { cycles(b, hookedLocker(b, node.Addr(), otelHooks(b, true))) })
	b.Run("interleaved", func(b *testing.B) { benchInterleaved(b, node.Addr(), otelHooks(b, true)) })
	b.Run("interleaved-metrics", func(b *testing.B) { benchInterleaved(b, node.Addr(), otelHooks(b, false)) })
}

// benchInterleaved runs Lock+Unlock cycles without hooks and with hooks by
// turns, and reports the wall and CPU time per cycle of each, and the
// overhead of hooks in percent.
func benchInterleaved(b *testing.B, addr string, hooks rlock.Hooks) {
	off, on := hookedLocker(b, addr, nil), hookedLocker(b, addr, hooks)
	ctx, name := benchContext(b), benchName(b)
	var wall, cpu [2]time.Duration
	for b.Loop() {
		for i, l := range [2]locker{off, on} {
			start, cpu0 := time.Now(), processCPU(b)
			if err := cycle(ctx, l, name); err != nil {
				b.Fatal(err)
			}
			cpu[i] += processCPU(b) - cpu0
			wall[i] += time.Since(start)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(wall[0].Microseconds())/n, "off-µs/cycle")
	b.ReportMetric(float64(wall[1].Microseconds())/n, "hooked-µs/cycle")
	b.ReportMetric(float64(cpu[0].Microseconds())/n, "off-cpu-µs/cycle")
	b.ReportMetric(float64(cpu[1].Microseconds())/n, "hooked-cpu-µs/cycle")
	b.ReportMetric(100*(float64(wall[1])/float64(wall[0])-1), "overhead-%")
	b.ReportMetric(100*(float64(cpu[1])/float64(cpu[0])-1), "cpu-overhead-%")
}

// otelHooks returns rlockotel's hooks on an OpenTelemetry SDK that keeps
// every metric for a manual reader and, with spans, samples every span;
// without, spans go to a no-op tracer. Shut down when b ends.
func otelHooks(b *testing.B, spans bool) rlock.Hooks {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() {
		require.NoError(b, tp.Shutdown(context.Background()))
		require.NoError(b, mp.Shutdown(context.Background()))
	})
	var tracer trace.TracerProvider = tp
	if !spans {
		tracer = tracenoop.NewTracerProvider()
	}
	hooks, err := rlockotel.New(rlockotel.WithTracerProvider(tracer), rlockotel.WithMeterProvider(mp),
		rlockotel.WithLockName(func(string) string { return "bench" }))
	require.NoError(b, err)
	return hooks
}

// hookedLocker returns an rlock Client on its own rueidis client, with
// hooks unless they are nil, closed when b ends; b reports allocations.
func hookedLocker(b *testing.B, addr string, hooks rlock.Hooks) locker {
	var opts []rlock.Option
	if hooks != nil {
		opts = append(opts, rlock.WithHooks(hooks))
	}
	c, err := rlock.New(newRueidis(b, addr), opts...)
	require.NoError(b, err)
	b.Cleanup(func() { require.NoError(b, c.Close()) })
	b.ReportAllocs()
	return rlockLocker{c}
}
