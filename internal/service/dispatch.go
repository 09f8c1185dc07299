package service

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Dispatch carries out a daemon action the MooseFS way. run is the daemon
// in the foreground; it is called for start with -f (and in the child that
// start without -f leaves in the background). args are the command-line
// arguments after the program name, used to start that child.
func Dispatch(action Action, name, lockPath, logPath string, foreground bool, args []string, run func() error) error {
	switch action {
	case ActionTest:
		if pid, ok := Running(lockPath); ok {
			fmt.Printf("%s pid: %d\n", name, pid)
			return nil
		}
		return fmt.Errorf("%s is not running", name)
	case ActionStop:
		if err := Stop(lockPath, 30*time.Second); err != nil {
			return err
		}
		fmt.Printf("%s stopped\n", name)
		return nil
	case ActionReload:
		if err := Reload(lockPath); err != nil {
			return err
		}
		fmt.Printf("%s: reload requested\n", name)
		return nil
	case ActionRestart:
		if _, ok := Running(lockPath); ok {
			if err := Stop(lockPath, 30*time.Second); err != nil {
				return err
			}
		}
	case ActionStart:
	default:
		return fmt.Errorf("%s: action %q is not handled here", name, action)
	}
	if foreground {
		return run()
	}
	if pid, ok := Running(lockPath); ok {
		return fmt.Errorf("%s is already running (pid %d)", name, pid)
	}
	child := []string{"-f"}
	for _, a := range args {
		if a == string(ActionRestart) {
			a = string(ActionStart)
		}
		child = append(child, a)
	}
	pid, err := Background(logPath, child, func() bool { _, ok := Running(lockPath); return ok }, 10*time.Second)
	if err != nil {
		return err
	}
	fmt.Printf("%s started (pid %d, log %s)\n", name, pid, logPath)
	return nil
}

// EnsureDir makes DATA_PATH if it is missing and says clearly when it is
// not a directory.
func EnsureDir(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(path, 0o750)
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("DATA_PATH %s is not a directory", path)
	}
	return nil
}
