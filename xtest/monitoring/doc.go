// Package monitoring holds the test of the shipped alert rules
// (etc/prometheus) and Grafana dashboard (etc/grafana) with Prometheus's
// own parsers. It has no code of its own.
package monitoring
