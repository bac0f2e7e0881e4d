package rlock

import "github.com/rlock/rlock/internal/alarm"

// Place is where the hold's place in its Client's deadlines is kept (it
// is an alarm.Item).
func (h *hold) Place() *int32 {
	return &h.place
}

// expire ends the holds whose local deadline passed, handed over by the
// Client's deadlines: every one's lock contexts are done before any lets
// go of its watchdog entry, which may wait for a renewal round. Close
// waits for it, so that the hooks have heard of every hold's end when
// Close returns; once Close has begun, it ends the holds itself.
func expire(holds []*hold) {
	c := holds[0].client()
	if !c.goLater() {
		return
	}
	defer c.bg.Done()
	ended := holds[:0]
	for _, h := range holds {
		if h.end(errDeadlinePassed) {
			h.client().cfg.logger.Warn("rlock: lock lost: lease deadline passed", "key", h.entry.Key)
			ended = append(ended, h)
		}
	}
	for _, h := range ended {
		h.letGo(errDeadlinePassed)
	}
}

// deadlines is a Client's holds by local deadline, on one timer.
type deadlines = alarm.Clock[*hold]
