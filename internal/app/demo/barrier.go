package demo

import "sync"

// together runs each fn in its own goroutine, releases them at the same
// moment once all have started, and waits for all to return.
func together(fns ...func()) {
	var (
		mu      sync.Mutex
		waiting = len(fns)
		release = make(chan struct{})
		wg      sync.WaitGroup
	)
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mu.Lock()
			if waiting--; waiting == 0 {
				close(release)
			}
			mu.Unlock()
			<-release
			fn()
		}()
	}
	wg.Wait()
}
