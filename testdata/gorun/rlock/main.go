// Patient: a recursive RLock with a writer waiting. get() holds the
// read lock and calls lookup(), which read-locks again; in between a
// writer called set(), whose Lock waits for the reader and makes every
// new RLock wait for it: the reader waits for the writer that waits for
// the reader. Go compiles this; sync.RWMutex documents it as forbidden.
package main

import (
	"runtime"
	"sync"
	"time"

	// the tail every patient shares: "stuck" once hung, then the
	// dump HANGDOC_DUMP asks for
	"github.com/hangdoc/hangdoc/testdata/gorun/selfdump"
)

type cache struct {
	mu sync.RWMutex
	m  map[string]string
}

func (c *cache) get(k string, pause func()) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	pause()
	return c.lookup(k)
}

func (c *cache) lookup(k string) string {
	c.mu.RLock() // recursive read lock
	defer c.mu.RUnlock()
	return c.m[k]
}

func (c *cache) set(k, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[k] = v
}

func keepAlive() {
	for range time.Tick(500 * time.Millisecond) {
		runtime.GC()
	}
}

func main() {
	c := &cache{m: map[string]string{}}
	held := make(chan bool)
	go c.get("k", func() {
		held <- true
		time.Sleep(100 * time.Millisecond) // the writer arrives
	})
	<-held
	go c.set("k", "v")
	go keepAlive()
	selfdump.Stuck(300 * time.Millisecond)
	select {}
}
