// Package settings describes a daemon's configuration once, as a table of
// Keys each bound to the field of the daemon's config that it sets, and
// derives everything else from that table: the MooseFS-style "KEY = VALUE"
// cfg file (read with cfgfile), one long command-line flag per key, the
// defaults, validation, reloads, the shipped example file and the docs table.
//
// Contract:
//   - A Spec[T] has Defaults (the config before any file or flag) and Keys,
//     which binds each key to a field of a T (Field, Ranged). A key's
//     default is its field's value in Defaults and its kind is the field's
//     type; its bounds are given where the field's range is defined (for
//     the election core, master.Config.Ranges). Nothing about a key is
//     written twice.
//   - Every key is also a flag: DATA_PATH becomes --data-path. Flags are
//     plain strings; Resolve parses them, so a bad flag and a bad file line
//     are reported the same way.
//   - Precedence: a flag set on the command line wins over the file, the
//     file wins over the default.
//   - A missing cfg file is fine unless the caller says it must exist (MooseFS
//     daemons run on defaults when the default cfg is absent); an explicit
//     -c file should be passed with mustExist.
//   - Every value, defaults included, is parsed and range-checked. All
//     problems are reported together in one error; each names the key, where
//     the value came from (file:line, flag --name, default), the bad value and
//     what is accepted. A key in the file that is not in the table is an
//     error: a misspelt key must not silently fall back to its default.
//   - Kinds: String; Int (decimal; int and uint64 fields, the latter never
//     below 0); Bool (0/1, yes/no, true/false, any case); Duration (Go
//     syntax such as "800ms" or "5s", or a bare number meaning seconds, as
//     MooseFS writes them); Float.
//   - Values accessors panic on a name not in the Spec or of another Kind:
//     that is a programming error, not a configuration error.
//   - A key marked Live (Key.Reload) is one a reload may put in force at
//     once; Reload resolves again and sorts the changed keys into those and
//     the ones that wait for a restart. Applying the live ones is the
//     daemon's.
//   - Example renders the table as a file in which every key is commented
//     out at its default, so the shipped file changes nothing.
package settings
