// Package webpage holds the browser tests of the web page every master
// serves (internal/webui), in headless Chromium: TestWitnessPanel against
// a fixture document, TestWebPage against a real cluster on loopback.
// They skip where no Chromium is found. It has no code of its own.
package webpage
