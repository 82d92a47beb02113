package events_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/madspark/madspark/events"
	"github.com/madspark/madspark/store/postgres/pgtest"
)

// BenchmarkDelivery measures how long an event takes from Publish to a
// subscriber: in the same process (handed over in memory), and from another
// process sharing the database (a second store handle), by polling a SQLite
// file at the default interval and by LISTEN/NOTIFY on PostgreSQL. It
// reports the mean latency (which includes storing the event), and for
// polling its ratio to the poll interval (events published at a random
// moment wait half of it on average).
//
//	go test -run '^$' -bench BenchmarkDelivery -benchtime 50x ./events
func BenchmarkDelivery(b *testing.B) {
	sqlitePath := func(b *testing.B) string { return filepath.Join(b.TempDir(), "m.db") }
	for _, bc := range []struct {
		name string
		open func(b *testing.B) (pub, sub store)
		poll time.Duration
	}{
		{"in-process/sqlite", func(b *testing.B) (store, store) {
			s := openSQLite(b, sqlitePath(b))
			return s, s
		}, 0},
		{"cross-process/sqlite-poll", func(b *testing.B) (store, store) {
			p := sqlitePath(b)
			return openSQLite(b, p), openSQLite(b, p)
		}, events.DefaultPollInterval},
		{"cross-process/postgres-notify", func(b *testing.B) (store, store) {
			url := pgtest.URL(b)
			return openPostgres(b, url), openPostgres(b, url)
		}, 0},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a, s := bc.open(b)
			pubHub := events.New(a, events.Options{})
			defer pubHub.Close()
			subHub := pubHub
			if a != s {
				subHub = events.New(s, events.Options{})
				defer subHub.Close()
			}
			run := newRun(b, a)
			publish(b, pubHub, progress(run, 0))
			ch, err := subHub.Subscribe(context.Background(), run, 0)
			if err != nil {
				b.Fatal(err)
			}
			next(b, ch, 5*time.Second)
			time.Sleep(50 * time.Millisecond) // let the listener start
			var total time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if bc.poll > 0 {
					// Publish at a random phase of the subscriber's
					// polling, as independent processes would.
					b.StopTimer()
					time.Sleep(rand.N(bc.poll))
					b.StartTimer()
				}
				start := time.Now()
				publish(b, pubHub, progress(run, i%100))
				next(b, ch, 10*time.Second)
				total += time.Since(start)
			}
			b.StopTimer()
			mean := total / time.Duration(b.N)
			b.ReportMetric(float64(mean.Microseconds()), "µs/event")
			if bc.poll > 0 {
				b.ReportMetric(float64(mean)/float64(bc.poll), "latency/poll-interval")
			}
		})
	}
}
