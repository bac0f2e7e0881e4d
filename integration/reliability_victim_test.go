package integration

import (
	"context"
	"errors"
	"time"
)

// The victim protocol lets a fault hit a hold the test chose. The test
// sends "ARM"; the victim worker, on its next hold, reports the hold's token
// ("HOLDING <token>") and waits, holding the lock. The test injects its
// fault for longer than the lease, waits until a newer holder has written
// to the fenced store, and sends "GO": the victim, whose lock is lost by
// then, writes with its stale token all the same, which the store must
// refuse. The victim runs in the test process (channels) or in a child
// process (pipes: victimLink and victimSide).

const (
	cmdArm = "ARM"
	cmdGo  = "GO"

	// victimPatience bounds how long a victim waits for GO: a test that
	// failed before sending it does not hang its workers.
	victimPatience = 30 * time.Second
)

// holdControl is the victim worker's end.
type holdControl interface {
	// armed reports, without waiting, whether the test asked for a hold.
	armed() bool
	// holdAndWait reports the hold with token to the test and waits for GO.
	holdAndWait(ctx context.Context, token int64)
}

// victimHandle is the test's end.
type victimHandle interface {
	send(cmd string) error
	// awaitHolding waits up to timeout for the victim to report its hold,
	// and returns the hold's token.
	awaitHolding(timeout time.Duration) (int64, error)
}

// localVictim is the victim protocol with a worker of the test process.
type localVictim struct {
	cmds    chan string
	holding chan int64
}

func newLocalVictim() *localVictim {
	return &localVictim{cmds: make(chan string, 2), holding: make(chan int64, 1)}
}

func (l *localVictim) send(cmd string) error {
	select {
	case l.cmds <- cmd:
		return nil
	default:
		return errors.New("the victim is not taking commands")
	}
}

func (l *localVictim) awaitHolding(timeout time.Duration) (int64, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case token := <-l.holding:
		return token, nil
	case <-timer.C:
		return 0, errors.New("the victim did not hold the lock in time")
	}
}

func (l *localVictim) armed() bool {
	select {
	case cmd := <-l.cmds:
		return cmd == cmdArm
	default:
		return false
	}
}

func (l *localVictim) holdAndWait(ctx context.Context, token int64) {
	select {
	case l.holding <- token:
	default:
	}
	awaitGo(ctx, l.cmds, nil)
}

// awaitGo waits for GO on cmds, for hangup (closed), for ctx to end, or
// for victimPatience to run out.
func awaitGo(ctx context.Context, cmds <-chan string, hangup <-chan struct{}) {
	timer := time.NewTimer(victimPatience)
	defer timer.Stop()
	for {
		select {
		case cmd := <-cmds:
			if cmd == cmdGo {
				return
			}
		case <-hangup:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}
