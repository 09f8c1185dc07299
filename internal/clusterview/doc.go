// Package clusterview is what the masters say of the cluster, put
// together once for every reader: the masters' answers to the status
// request (AskAll, over their client port, as mfscli asks them), built
// into one Dataset (Build: masters, chunkservers, refused clones,
// locations, the quorum verdict, the summary, security and layout
// warnings, the election history) whose JSON is mfscli -j's. mfscli
// renders it on a terminal; its rows carry the tone (Tone) that colours
// them there. Build is pure: the same answers give the same dataset.
package clusterview
