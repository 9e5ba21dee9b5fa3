// Porcupine on a history exported by `strata cluster history --export
// porcupine`: each key checked alone as a register (put, get, delete,
// not found) with Porcupine's own search, with a time limit per key, the
// result and the time it took printed per key. The independent checker
// beside Strata's (docs/consistency.md, docs/benchmarks.md).
//
//	go run . HISTORY.json [TIMEOUT_SECONDS]
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"
)

type op struct {
	Client  int    `json:"client"`
	Key     string `json:"key"`
	Op      string `json:"op"`
	Value   string `json:"value"`
	Found   bool   `json:"found"`
	Call    int64  `json:"call"`
	Return  int64  `json:"return"`
	Unknown bool   `json:"unknown"`
}

type input struct {
	op    string
	value string
}

type output struct {
	value string
	found bool
}

type state struct {
	value   string
	present bool
}

var model = porcupine.Model{
	Init: func() interface{} { return state{} },
	Step: func(st, in, out interface{}) (bool, interface{}) {
		s := st.(state)
		i := in.(input)
		switch i.op {
		case "put":
			return true, state{i.value, true}
		case "delete":
			return true, state{}
		default:
			o := out.(output)
			if o.found {
				return s.present && s.value == o.value, s
			}
			return !s.present, s
		}
	},
	Equal: func(a, b interface{}) bool { return a.(state) == b.(state) },
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run . HISTORY.json [TIMEOUT_SECONDS]")
		os.Exit(2)
	}
	timeout := 60 * time.Second
	if len(os.Args) > 2 {
		s, err := strconv.Atoi(os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		timeout = time.Duration(s) * time.Second
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var ops []op
	if err := json.Unmarshal(data, &ops); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	byKey := map[string][]porcupine.Operation{}
	for _, o := range ops {
		byKey[o.Key] = append(byKey[o.Key], porcupine.Operation{
			ClientId: o.Client,
			Input:    input{o.Op, o.Value},
			Call:     o.Call,
			Output:   output{o.Value, o.Found},
			Return:   o.Return,
		})
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bad := false
	for _, k := range keys {
		start := time.Now()
		res := porcupine.CheckOperationsTimeout(model, byKey[k], timeout)
		word := map[porcupine.CheckResult]string{
			porcupine.Ok:      "linearizable",
			porcupine.Illegal: "NOT linearizable",
			porcupine.Unknown: "unknown (timed out)",
		}[res]
		if res != porcupine.Ok {
			bad = true
		}
		fmt.Printf("key %s: %d operations: %s in %.3f s\n", k, len(byKey[k]), word, time.Since(start).Seconds())
	}
	if bad {
		os.Exit(1)
	}
}
