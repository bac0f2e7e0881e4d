package watchdog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// ErrClosed is returned by Add after Close.
var ErrClosed = errors.New("watchdog: closed")

// MaxBatch is the most keys one renew script call carries: enough to make a
// call worth its round trip, few enough that the script does not hold up
// Redis.
const MaxBatch = 100

// Config says how a Watchdog renews.
type Config struct {
	// Lease is the lease every renewal sets, in whole milliseconds; a hold
	// is renewed every Lease/3. It must be at least 1ms.
	Lease time.Duration
	// Logger receives renewal failures, at Warn. nil discards them.
	Logger *slog.Logger
	// Round, if not nil, is called on the watchdog's goroutine after each
	// round that sent renewals, with what the round did, before the
	// round's callbacks run; not for a round that Close cut short. It must
	// not block.
	Round func(RoundStats)
}

// RoundStats is what one renewal round did.
type RoundStats struct {
	Calls    int           // renew script calls (batches)
	Renewed  int           // holds the replies confirmed
	Lost     int           // holds the replies found gone
	Failed   int           // holds of batches that failed, retried on the next tick
	Duration time.Duration // from sending the round to its replies
}

// Watchdog renews the leases of its holds from one goroutine until they are
// removed or lost, or until Close. It is safe for concurrent use.
type Watchdog struct {
	rc      rueidis.Client
	cluster bool          // batches must keep to one slot
	lease   string        // Lease in ms: the renew script's ARGV[1]
	period  time.Duration // Lease/3: between renewals
	bound   time.Duration // period/2: the bound on a round (roundBound)
	log     *slog.Logger
	onRound func(RoundStats) // Config.Round

	cancel context.CancelFunc // stops run
	done   chan struct{}      // closed when run has returned
	wake   chan struct{}      // Add gave an idle goroutine a hold

	round round // run's working memory, reused from round to round

	mu      sync.Mutex
	wheel   wheel
	count   int           // holds added and not yet gone
	idle    bool          // run waits with no tick armed: Add must wake it
	closed  bool          // Close has begun
	sending chan struct{} // while a round is out: closed once it is settled
}

// New returns a Watchdog that renews through rc with cfg, and starts its
// goroutine; Close stops it.
func New(rc rueidis.Client, cfg Config) (*Watchdog, error) {
	w, err := newWatchdog(rc, cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx)
	return w, nil
}

// newWatchdog checks cfg and returns a Watchdog whose goroutine has not
// started.
func newWatchdog(rc rueidis.Client, cfg Config) (*Watchdog, error) {
	if rc == nil {
		return nil, errors.New("watchdog: nil rueidis client")
	}
	if cfg.Lease < time.Millisecond {
		return nil, fmt.Errorf("watchdog: lease %v is under 1ms", cfg.Lease)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	period := cfg.Lease / 3
	return &Watchdog{
		rc:      rc,
		cluster: rc.Mode() == rueidis.ClientModeCluster,
		lease:   strconv.FormatInt(cfg.Lease.Milliseconds(), 10),
		period:  period,
		bound:   period / roundBound,
		log:     log,
		onRound: cfg.Round,
		done:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
		wheel:   newWheel(period),
	}, nil
}

// Add registers h. Its first renewal is due Lease/3 from now. It fails
// with ErrClosed after Close, and when h is nil or was added before.
func (w *Watchdog) Add(h *Entry) error {
	if h == nil {
		return errors.New("watchdog: nil hold")
	}
	now := time.Now()

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if h.phase != unadded {
		return errors.New("watchdog: hold added twice")
	}
	h.w, h.phase = w, waiting
	w.wheel.schedule(h, w.wheel.tickOf(now)+w.wheel.period)
	w.count++
	if w.idle {
		// Only an idle goroutine is woken: one with a tick armed renews
		// h in time (its first renewal is a period away, ticks are
		// shorter), and a wake-up per Add would cost every Lock a
		// goroutine switch.
		w.idle = false
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Remove stops renewing h. When it returns, no renewal of h is in flight
// or will be sent, and no callback of h will start: if h is in the round
// being sent, Remove waits until that round's replies are settled. (A
// request that timed out may still reach Redis late; the renew script is
// owner-checked, so it can only extend a lock whose field is still there.)
//
// Remove may be called from h's own callbacks. It does not wait for a
// callback of h that has already started, which may be its caller: one
// starts when the Watchdog takes it, under its lock, after a round, and it
// may enter the Holder just after a Remove from another goroutine returned.
// A Holder that stops caring at Remove checks its own state in its
// methods (rlock's do). Waiting for it would need the Watchdog to tell its
// own goroutine from the caller's.
// Removing a hold that is not registered (never added, added to another
// Watchdog, already removed or lost) does nothing.
func (w *Watchdog) Remove(h *Entry) {
	if h == nil {
		return
	}
	w.mu.Lock()
	if h.w != w {
		w.mu.Unlock()
		return
	}
	var settled chan struct{}
	switch h.phase {
	case waiting:
		w.wheel.unlink(h)
		w.count--
	case sending:
		// Callbacks run only between rounds, so a hold is never sending
		// when its callback calls Remove: this wait is never on the
		// goroutine itself.
		settled = w.sending
		w.count--
	}
	h.phase = gone
	h.pending = noCall
	w.mu.Unlock()
	if settled != nil {
		<-settled
	}
}

// Len returns the number of holds registered now.
func (w *Watchdog) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count
}

// Close stops the goroutine and waits for it. The holds are dropped
// without callbacks. Close must not be called from a callback. Calling it
// again does nothing.
func (w *Watchdog) Close() error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.cancel()
	<-w.done

	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range w.wheel.drain(math.MaxInt64, nil) {
		h.phase = gone
		h.pending = noCall
	}
	w.count = 0
	return nil
}

// run is the watchdog goroutine: at every tick while holds are registered,
// it renews those due.
func (w *Watchdog) run(ctx context.Context) {
	defer close(w.done)
	// The timer fires at once; that pass finds nothing due, and the timer
	// stays idle until Add wakes the loop.
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-w.wake:
		}
		w.renew(ctx, time.Now())
		if next, ok := w.nextTick(); ok {
			timer.Reset(time.Until(next))
		}
	}
}

// nextTick returns when the next tick begins, and false when no hold is
// registered, so that an idle Watchdog does not wake up: it is then idle
// until Add wakes it.
func (w *Watchdog) nextTick() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.count == 0 {
		w.idle = true
		return time.Time{}, false
	}
	return w.wheel.at(w.wheel.cursor + 1), true
}
