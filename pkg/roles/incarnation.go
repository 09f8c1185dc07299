package roles

// IncarnationBase is what a master's stored incarnation becomes before
// master.New raises it by one for the new run: above every incarnation this
// master had before, and never one it had before, whatever its wall clock
// says. stored is the incarnation its store remembers (a store restored
// from an older copy remembers a lower one than it used), wallUnixMs the
// host's wall clock, salt random bits the driver draws (crypto/rand in the
// daemon, the seed's source in the simulator).
//
// The high 32 bits are the wall clock's seconds (until 2106), so a later
// start on a sane clock is above any earlier one even from an older copy
// of the store; the low 31 bits are salt, so a start from an older copy on
// a clock that is behind (a rebuilt VM before NTP stepped it, a wrong RTC)
// lands on stored+1+salt, and repeats the incarnation of the run that copy
// was taken from with a chance of 2^-31 rather than for certain (security
// review N5: voters refuse an epoch from another incarnation of its owner,
// which a repeated incarnation would slip past).
func IncarnationBase(stored uint64, wallUnixMs int64, salt uint32) uint64 {
	clock := uint64(0)
	if wallUnixMs > 0 {
		clock = uint64(wallUnixMs/1000) << 32
	}
	return max(stored, clock) + uint64(salt&(1<<31-1))
}
