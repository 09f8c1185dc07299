package protocol

// Refusals of client requests by mfsexports.cfg. The master answers with
// one of these texts in ClientReply.Err, followed by ": client ADDRESS,
// key KEY" (a list: "prefix KEY"); the texts are stable, for scripts. The
// core never sees a refused request.
const (
	ErrExportsDenied          = "refused by mfsexports.cfg: no line gives this address access to this key"
	ErrExportsReadOnly        = "refused by mfsexports.cfg: read-only for this address and key"
	ErrExportsPasswordMissing = "refused by mfsexports.cfg: the line for this address and key needs its password (pkg/client Config.Password; mfscli --mfspassword or MFSPASSWORD)"
	ErrExportsPasswordWrong   = "refused by mfsexports.cfg: wrong password"
	ErrExportsThrottled       = "refused by mfsexports.cfg: too many wrong password proofs from this address lately"
)
