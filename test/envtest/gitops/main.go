// Command gitops-judge asks the GitOps tools' own code what they conclude from
// an object's status: kstatus (sigs.k8s.io/cli-utils pkg/kstatus/status, the
// library Flux's health checks, kpt and cli-utils' apply waiters read) and
// Argo CD's Lua health check run in gopher-lua, the interpreter and pin Argo CD
// v3.6.1 uses. The integration suite (test/support/gitops-judge.ts) reads its
// verdicts, so no TypeScript copy of either tool's rules stands in for them.
//
// Argo CD itself cannot be imported (v3.6.1 needs Go 1.27 and brings the whole
// server), so the few functions between the Lua VM and the verdict are
// reproduced from its source, each cited: the VM setup and the reading of the
// returned table (util/lua/lua.go: runLuaWithResourceActionParameters,
// ExecuteHealthLua, decodeValue, isValidHealthStatusCode; util/lua/oslib_safe.go)
// and the controller's wrapping of the script's verdict (gitops-engine
// pkg/health/health.go: GetResourceHealth, pendingDeletionHealth).
//
// Usage: gitops-judge -lua health.lua [-open-libs] [-script-only] [OBJECT_JSON...]
// Objects come as arguments or, without any, one JSON object per line on
// stdin; for each, one JSON line on stdout:
//
//	{"kstatus":{"status":"Current","message":"..."},"argocd":{"status":"Healthy","message":"..."}}
//
// -open-libs runs the script as Argo CD runs its built-in scripts and its own
// health_test.yaml fixtures (util/lua/health_test.go) or an argocd-cm script
// with resource.customizations.useOpenLibs.<group>_<kind>: true; without it,
// as an argocd-cm script by default: base, table, package and the safe os
// only (no string, no math). -script-only gives the script's own verdict
// (ExecuteHealthLua, what health_test.yaml states) instead of the
// controller's (which adds the pending-deletion rule and turns a script error
// into Unknown).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	luajson "layeh.com/gopher-json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// verdict is one tool's conclusion; Error is set when the tool itself failed.
type verdict struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

type judgement struct {
	Kstatus verdict `json:"kstatus"`
	// Argocd is null when the script returned nil (Argo CD then assesses no health).
	Argocd *verdict `json:"argocd"`
}

// healthStatus is gitops-engine pkg/health/health.go's HealthStatus, the type
// Argo CD unmarshals the script's JSON-encoded table into.
type healthStatus struct {
	Status          string `json:"status,omitempty"`
	Message         string `json:"message,omitempty"`
	DeletionMessage string `json:"deletionMessage,omitempty"`
}

func main() {
	script := flag.String("lua", "", "the Argo CD health script (Lua 5.1)")
	openLibs := flag.Bool("open-libs", false, "open Lua's standard libraries, as for built-in scripts or useOpenLibs: true")
	scriptOnly := flag.Bool("script-only", false, "the script's own verdict (health_test.yaml), not the controller's")
	flag.Parse()
	if *script == "" {
		fail("-lua is required")
	}
	src, err := os.ReadFile(*script)
	if err != nil {
		fail(err.Error())
	}
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	judge := func(line string) {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(line)); err != nil {
			fail(fmt.Sprintf("not a Kubernetes object: %v", err))
		}
		j := judgement{Kstatus: kstatusVerdict(u)}
		if *scriptOnly {
			j.Argocd = scriptVerdict(u, string(src), *openLibs)
		} else {
			j.Argocd = controllerVerdict(u, string(src), *openLibs)
		}
		if err := out.Encode(j); err != nil {
			fail(err.Error())
		}
	}
	if flag.NArg() > 0 {
		for _, arg := range flag.Args() {
			judge(arg)
		}
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		if strings.TrimSpace(in.Text()) != "" {
			judge(in.Text())
		}
	}
	if err := in.Err(); err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "gitops-judge:", msg)
	os.Exit(2)
}

func kstatusVerdict(u *unstructured.Unstructured) verdict {
	res, err := status.Compute(u)
	if err != nil {
		return verdict{Error: err.Error()}
	}
	return verdict{Status: res.Status.String(), Message: res.Message}
}

// controllerVerdict is gitops-engine pkg/health/health.go GetResourceHealth
// with Argo CD's Lua override (util/lua/lua.go ResourceHealthOverrides): the
// script's error becomes Unknown with its message; a verdict on an object being
// deleted becomes Progressing "Pending deletion" (pendingDeletionHealth; no
// object here carries Argo CD's hook finalizer). A nil verdict stays nil: this
// kind has no built-in check to fall back on.
func controllerVerdict(u *unstructured.Unstructured, script string, openLibs bool) *verdict {
	hs, err := executeHealthLua(u, script, openLibs)
	if err != nil {
		return &verdict{Status: "Unknown", Message: err.Error()}
	}
	if hs == nil {
		return nil
	}
	if u.GetDeletionTimestamp() != nil {
		if hs.DeletionMessage != "" {
			return &verdict{Status: hs.Status, Message: hs.DeletionMessage}
		}
		msg := "Pending deletion"
		if f := u.GetFinalizers(); len(f) > 0 {
			msg = "Pending deletion; blocked by finalizers: " + strings.Join(f, ", ")
		}
		return &verdict{Status: "Progressing", Message: msg}
	}
	return &verdict{Status: hs.Status, Message: hs.Message}
}

// scriptVerdict is what util/lua/health_test.go compares with health_test.yaml:
// ExecuteHealthLua's result, an error being the test's failure.
func scriptVerdict(u *unstructured.Unstructured, script string, openLibs bool) *verdict {
	hs, err := executeHealthLua(u, script, openLibs)
	if err != nil {
		return &verdict{Error: err.Error()}
	}
	if hs == nil {
		return nil
	}
	return &verdict{Status: hs.Status, Message: hs.Message}
}

// executeHealthLua is util/lua/lua.go ExecuteHealthLua: the returned table,
// JSON-encoded by layeh.com/gopher-json, unmarshalled into a HealthStatus; an
// empty table (which encodes as an array) is an empty status; a status that is
// not one of Argo CD's is Unknown "Lua returned an invalid health status".
func executeHealthLua(u *unstructured.Unstructured, script string, openLibs bool) (*healthStatus, error) {
	l, err := runLua(u, script, openLibs)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	ret := l.Get(-1)
	switch ret.Type() {
	case lua.LTTable:
		b, err := luajson.Encode(ret)
		if err != nil {
			return nil, err
		}
		hs := &healthStatus{}
		if err := json.Unmarshal(b, hs); err != nil {
			typeError := &json.UnmarshalTypeError{Value: "array", Type: reflect.TypeFor[*healthStatus]()}
			if errors.As(err, &typeError) {
				return &healthStatus{}, nil
			}
			return nil, err
		}
		switch hs.Status {
		case "Unknown", "Progressing", "Suspended", "Healthy", "Degraded", "Missing":
			return hs, nil
		}
		return &healthStatus{Status: "Unknown", Message: "Lua returned an invalid health status"}, nil
	case lua.LTNil:
		return nil, nil
	}
	return nil, fmt.Errorf("expect %s output from Lua script, not %s", "table", ret.Type().String())
}

// runLua is util/lua/lua.go runLuaWithResourceActionParameters for a health
// script: a state with the standard libraries only when openLibs; then, either
// way, package, base and table opened and Argo CD's safe os (time and date
// only) opened under the name OpenSafeOs registers it (lua.TabLibName, so its
// functions land in `table`; a global `os` exists only with open libs) and
// preloaded for require("os"); a one-second deadline; the object as the global
// `obj`; an empty `actionParams` global. A run error loses its Lua stack trace,
// as Argo CD strips it before the message reaches the user.
func runLua(u *unstructured.Unstructured, script string, openLibs bool) (*lua.LState, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: !openLibs})
	for _, pair := range []struct {
		n string
		f lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.OsLibName, openSafeOs},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(pair.f), NRet: 0, Protect: true}, lua.LString(pair.n)); err != nil {
			panic(err)
		}
	}
	l.PreloadModule(lua.OsLibName, safeOsLoader)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("actionParams", l.CreateTable(0, 0))
	l.SetGlobal("obj", decodeValue(l, u.Object))

	fn, err := l.LoadString(script)
	if err == nil {
		l.Push(fn)
		err = l.PCall(0, lua.MultRet, nil)
	}
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) && apiErr.Type == lua.ApiErrorRun {
		apiErr.StackTrace = ""
		err = apiErr
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// safeOsFuncs are Argo CD's safe os functions (util/lua/oslib_safe.go), which
// it copied from gopher-lua's own os.time and os.date; here they are taken from
// gopher-lua's os library itself rather than copied again.
func safeOsFuncs(l *lua.LState) map[string]lua.LGFunction {
	scratch := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer scratch.Close()
	scratch.Push(scratch.NewFunction(lua.OpenOs))
	scratch.Push(lua.LString(lua.OsLibName))
	scratch.Call(1, 1)
	osTable := scratch.Get(-1).(*lua.LTable)
	funcs := map[string]lua.LGFunction{}
	for _, name := range []string{"time", "date"} {
		funcs[name] = osTable.RawGetString(name).(*lua.LFunction).GFunction
	}
	return funcs
}

func openSafeOs(l *lua.LState) int {
	l.Push(l.RegisterModule(lua.TabLibName, safeOsFuncs(l)))
	return 1
}

func safeOsLoader(l *lua.LState) int {
	l.Push(l.SetFuncs(l.NewTable(), safeOsFuncs(l)))
	return 1
}

// decodeValue is util/lua/lua.go decodeValue: how Argo CD turns the live
// object (an unstructured map, integers as int64) into Lua values. A type it
// does not list becomes nil, as there.
func decodeValue(l *lua.LState, value any) lua.LValue {
	switch converted := value.(type) {
	case bool:
		return lua.LBool(converted)
	case float64:
		return lua.LNumber(converted)
	case string:
		return lua.LString(converted)
	case json.Number:
		return lua.LString(converted)
	case int:
		return lua.LNumber(converted)
	case int32:
		return lua.LNumber(converted)
	case int64:
		return lua.LNumber(converted)
	case []any:
		arr := l.CreateTable(len(converted), 0)
		for _, item := range converted {
			arr.Append(decodeValue(l, item))
		}
		return arr
	case map[string]any:
		tbl := l.CreateTable(0, len(converted))
		for key, item := range converted {
			tbl.RawSetH(lua.LString(key), decodeValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}
