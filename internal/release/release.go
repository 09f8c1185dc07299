// Package release names this build: the version the three binaries print
// and the daemons report (StatusResp.Version, CSInfo.Version; mfscli -SIM
// shows it).
package release

// Version is this build's version.
const Version = "0.3.0"
