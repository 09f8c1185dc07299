// Package xtest is the root of the nested test module: the tests whose
// dependencies are too heavy for the main module's go.mod (headless
// Chromium through chromedp; Prometheus's rule and PromQL parsers, which
// bring in client-go). It replaces the main module with ../, so its tests
// import the main module's packages, internal ones included, as they
// are in the tree. `make test` runs them and `make vet` checks them.
//
//   - webpage: the web page every master serves, driven in headless
//     Chromium against a fixture document (TestWitnessPanel) and against
//     a real cluster (TestWebPage).
//   - monitoring: the shipped alert rules and Grafana dashboard
//     (TestAlertRules, TestDashboard).
package xtest
