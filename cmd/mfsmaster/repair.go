package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/mfs-election/mfs-election/internal/service"
	"github.com/mfs-election/mfs-election/pkg/metadata"
	"github.com/mfs-election/mfs-election/pkg/roles"
	"github.com/mfs-election/mfs-election/pkg/roles/master"
	"github.com/mfs-election/mfs-election/pkg/wire"
)

// repairMetadata is `mfsmaster repair`: with no ids it lists the registry
// and any forced removal already recorded; with --remove-chunkservers it
// records that those members will never vote again, so that this master
// counts without them (docs/operations.md, "A registry no LEADER can be
// elected under"). It runs only while the master is stopped (the lock),
// and touches nothing it could not read.
func repairMetadata(out io.Writer, dataPath, lockPath, remove string) error {
	lock, err := service.Acquire(lockPath)
	if err != nil {
		return fmt.Errorf("%w (repair runs only while this master is stopped)", err)
	}
	defer lock.Release()
	st, err := metadata.OpenMaster(dataPath)
	if err != nil {
		return err
	}
	defer st.Close()
	stored, err := st.Load()
	if err != nil {
		return err
	}
	cfg := master.NewestConfig(stored)
	if cfg == nil {
		return fmt.Errorf("%s holds no metadata: nothing to repair", st.Path())
	}
	if strings.TrimSpace(remove) == "" {
		fmt.Fprintf(out, "registry version %d, %d chunkservers:\n", cfg.Version, len(cfg.Members))
		for _, m := range cfg.Members {
			mark := ""
			if slices.Contains(stored.Hard.ForcedOut, m.ID) {
				mark = "  (forced out: not counted until a LEADER removes it)"
			}
			fmt.Fprintf(out, "  %d\t%v:%d%s\n", m.ID, m.Addr, m.Port, mark)
		}
		return nil
	}
	var ids []wire.CSID
	for _, f := range strings.Split(remove, ",") {
		f = strings.TrimPrefix(strings.TrimSpace(f), "CS")
		n, err := strconv.ParseUint(f, 10, 32)
		if err != nil || n == 0 {
			return fmt.Errorf("--remove-chunkservers: %q is not a chunkserver id (a number as -SCS lists it)", f)
		}
		ids = append(ids, wire.CSID(n))
	}
	forced, err := master.ForcedOutOf(cfg, append(slices.Clone(stored.Hard.ForcedOut), ids...))
	if err != nil {
		return fmt.Errorf("--remove-chunkservers: %w", err)
	}
	h := stored.Hard
	h.ForcedOut = forced
	if err := st.Apply(roles.Persist{Hard: &h}); err != nil {
		return err
	}
	fmt.Fprintf(out, "mfsmaster: %s: chunkservers %v will not be counted (registry version %d keeps %d of %d).\n",
		st.Path(), forced, cfg.Version, len(cfg.Members)-len(forced), len(cfg.Members))
	fmt.Fprintln(out, "Run the same repair on every master before starting any of them; the LEADER they elect removes these chunkservers from the registry.")
	return nil
}

// acceptLoss is `mfsmaster repair --accept-loss`: the way out of an ELECT
// that holds the votes but waits for ever for changes that only a lost
// master held (its disk is gone, no other master and no store log has
// them: -SIM says "waiting for the changes that only a lost master
// held"). It records, in this master's hard state, that the commit points
// told by every LEADER up to the highest epoch it has seen count as
// satisfied for its next win; that LEADER's own word then supersedes
// them. The changes beyond this master's log are lost, knowingly: every
// client that was told they were done was told wrong. Run it on one
// master only, the one to promote (docs/operations.md, "Bringing a lost
// site back").
func acceptLoss(out io.Writer, dataPath, lockPath string) error {
	lock, err := service.Acquire(lockPath)
	if err != nil {
		return fmt.Errorf("%w (repair runs only while this master is stopped)", err)
	}
	defer lock.Release()
	st, err := metadata.OpenMaster(dataPath)
	if err != nil {
		return err
	}
	defer st.Close()
	stored, err := st.Load()
	if err != nil {
		return err
	}
	if master.NewestConfig(stored) == nil {
		return fmt.Errorf("%s holds no metadata: start it with -e instead (it copies a LEADER's)", st.Path())
	}
	h := stored.Hard
	h.AcceptLoss = max(h.MaxEpoch, h.Epoch, h.LeaderEpoch)
	if err := st.Apply(roles.Persist{Hard: &h}); err != nil {
		return err
	}
	last := stored.Base.Pos
	if n := len(stored.Entries); n > 0 {
		last = stored.Entries[n-1].Pos
	}
	fmt.Fprintf(out, "mfsmaster: %s: this master may lead with its changelog as it is (up to version %d): changes that LEADERs up to epoch %d acknowledged beyond it are given up.\n",
		st.Path(), last.Version, h.AcceptLoss)
	fmt.Fprintln(out, "Start it; once it leads, the record is cleared. Do not run this on another master: start the others with -e if their metadata is gone.")
	return nil
}
