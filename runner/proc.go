package runner

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/chunklock/chunklock/client"
)

// proc is one job process started under a claim: Run supervises one, a
// pool (pool.go) many.
type proc struct {
	cmd  *exec.Cmd
	tail *tailBuffer
	done chan struct{} // closed when the process has exited
	err  error         // how it exited; read after done
}

// startProc starts opt.Command with claim in its environment (Environ),
// its stderr's tail kept for a failure's reason. The process runs in its
// own process group; it is started and waited for on one locked OS
// thread: on Linux it gets SIGKILL when the thread that started it ends
// (Pdeathsig), which is then only when the runner itself dies.
func startProc(claim client.Claim, opt Options) (*proc, error) {
	p := &proc{tail: &tailBuffer{max: opt.TailBytes}, done: make(chan struct{})}
	cmd := exec.Command(opt.Command[0], opt.Command[1:]...)
	cmd.Dir = opt.Dir
	cmd.Env = append(append(os.Environ(), opt.Env...), Environ(claim, opt.EnvAllow)...)
	cmd.Stdout = opt.Stdout
	cmd.Stderr = io.MultiWriter(opt.Stderr, p.tail)
	cmd.SysProcAttr = sysProcAttr()
	p.cmd = cmd
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("runner: could not start %s: %w", opt.Command[0], err)
	}
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// stop stops the process group, SIGTERM then SIGKILL after grace, and
// returns how the process exited.
func (p *proc) stop(grace time.Duration, logf func(string, ...any), why string) error {
	logf("stopping pid %d: %s", p.pid(), why)
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		logf("pid %d still running after %s: SIGKILL", p.pid(), grace)
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
	}
	return p.err
}

// reason is the failure reason of a process that exited with an error.
func (p *proc) reason() string {
	tail := strings.TrimSpace(p.tail.String())
	if tail == "" {
		return p.err.Error() + " (nothing on stderr)"
	}
	return p.err.Error() + ": " + tail
}
