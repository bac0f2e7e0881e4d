package redistest

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/rlock/rlock/internal/redisserver"
)

// Dial returns a rueidis client made with opt (ClientOption, say). A node
// that a fault has down (killed, paused, cut off) when a worker process
// starts is tried again until ctx is done or the start timeout passed: the
// worker joins the run once the node is back rather than fail it.
func Dial(ctx context.Context, opt rueidis.ClientOption) (rueidis.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, redisserver.StartTimeout)
	defer cancel()
	var rc rueidis.Client
	err := redisserver.Poll(ctx, func(context.Context) error {
		var err error
		rc, err = rueidis.NewClient(opt)
		return err
	})
	return rc, err
}
