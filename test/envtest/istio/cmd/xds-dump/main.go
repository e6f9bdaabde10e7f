// Command xds-dump connects to istiod's plaintext xDS as one proxy (a sidecar
// or a gateway), with Istio's own delta ADS client (istio.io/istio/pkg/adsc,
// the one istioctl and Istio's tests use), and prints what that proxy's Envoy
// would receive as one JSON object on stdout, then exits:
//
//	{"listeners": [{"name", "port", "routeConfigNames"}], "clusters": [names],
//	 "routes": [RouteConfiguration as Envoy's JSON, proto field names]}
//
// Like Envoy it watches every listener and cluster, then the route
// configurations the listeners' HTTP connection managers name (RDS). No Envoy
// runs in the rig; this is the configuration one would be given.
//
// With --watch it stays connected, as an Envoy does, and prints one such JSON
// object per line: the first once complete, then one each time istiod's pushes
// change it (after a quiet 100 ms), until the stream ends.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"istio.io/istio/pilot/pkg/model"
	v3 "istio.io/istio/pilot/pkg/xds/v3"
	"istio.io/istio/pkg/adsc"
	"istio.io/istio/pkg/log"
)

type listenerSummary struct {
	Name             string   `json:"name"`
	Port             uint32   `json:"port"`
	RouteConfigNames []string `json:"routeConfigNames"`
}

// state is what the handlers (run on the client's receive goroutine) have seen.
type state struct {
	mu        sync.Mutex
	listeners map[string]listenerSummary
	clusters  map[string]bool
	routes    map[string]*route.RouteConfiguration
	changed   chan struct{}
}

func (s *state) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// complete: every route configuration a listener names has arrived.
func (s *state) complete() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.listeners {
		for _, r := range l.RouteConfigNames {
			if s.routes[r] == nil {
				return false
			}
		}
	}
	return true
}

// routeConfigNames are the RDS names of a listener's HTTP connection managers.
func routeConfigNames(l *listener.Listener) []string {
	names := map[string]bool{}
	for _, fc := range l.GetFilterChains() {
		for _, f := range fc.GetFilters() {
			m := &hcm.HttpConnectionManager{}
			if f.GetTypedConfig() == nil || f.GetTypedConfig().UnmarshalTo(m) != nil {
				continue
			}
			if n := m.GetRds().GetRouteConfigName(); n != "" {
				names[n] = true
			}
		}
	}
	out := make([]string, 0, len(names))
	for n := range names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func main() {
	xds := flag.String("xds", "127.0.0.1:15010", "istiod's plaintext xDS address")
	nodeType := flag.String("type", "sidecar", `the proxy: "sidecar" or "router" (a gateway)`)
	namespace := flag.String("namespace", "default", "the proxy's namespace")
	workload := flag.String("workload", "xds-dump", "the proxy's workload (pod) name")
	ip := flag.String("ip", "10.255.0.254", "the proxy's IP (no pod needs to have it)")
	labels := flag.String("labels", "", "the proxy's labels, k=v,k=v (a gateway's must match its Gateway's selector)")
	timeout := flag.Duration("timeout", 20*time.Second, "give up after this long (with --watch: on the first configuration)")
	watch := flag.Bool("watch", false, "stay connected and print the configuration again, one JSON object per line, each time it changes")
	flag.Parse()
	// Istio's log writes to stdout by default, where the JSON goes.
	logOpts := log.DefaultOptions()
	logOpts.OutputPaths = []string{"stderr"}
	logOpts.SetDefaultOutputLevel(log.OverrideScopeName, log.WarnLevel)
	if err := log.Configure(logOpts); err != nil {
		fail("logging: %v", err)
	}

	meta := map[string]any{"NAMESPACE": *namespace, "CLUSTER_ID": "Kubernetes"}
	if *labels != "" {
		l := map[string]any{}
		for _, kv := range strings.Split(*labels, ",") {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = v
		}
		meta["LABELS"] = l
	}
	metaStruct, err := structpb.NewStruct(meta)
	if err != nil {
		fail("node metadata: %v", err)
	}

	s := &state{listeners: map[string]listenerSummary{}, clusters: map[string]bool{}, routes: map[string]*route.RouteConfiguration{}, changed: make(chan struct{}, 1)}
	client := adsc.NewDelta(*xds, &adsc.DeltaADSConfig{Config: adsc.Config{
		ClientName: "xds-dump", Namespace: *namespace, Workload: *workload, IP: *ip,
		NodeType: model.NodeType(*nodeType), Meta: metaStruct,
	}},
		adsc.Register(func(ctx adsc.HandlerContext, name, _ string, l *listener.Listener, e adsc.Event) {
			s.mu.Lock()
			if e == adsc.EventDelete {
				delete(s.listeners, name)
			} else {
				names := routeConfigNames(l)
				s.listeners[name] = listenerSummary{Name: name, Port: l.GetAddress().GetSocketAddress().GetPortValue(), RouteConfigNames: names}
				ctx.RegisterDependency(v3.RouteType, names...)
			}
			s.mu.Unlock()
			s.notify()
		}),
		adsc.Watch[*listener.Listener]("*"),
		adsc.Register(func(_ adsc.HandlerContext, name, _ string, _ *cluster.Cluster, e adsc.Event) {
			s.mu.Lock()
			s.clusters[name] = e != adsc.EventDelete
			s.mu.Unlock()
			s.notify()
		}),
		adsc.Watch[*cluster.Cluster]("*"),
		adsc.Register(func(_ adsc.HandlerContext, name, _ string, r *route.RouteConfiguration, e adsc.Event) {
			s.mu.Lock()
			if e == adsc.EventDelete {
				delete(s.routes, name)
			} else {
				s.routes[name] = r
			}
			s.mu.Unlock()
			s.notify()
		}),
	)

	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	ctx, cancel := context.WithTimeout(runCtx, *timeout)
	defer cancel()
	go func() {
		client.Run(runCtx)
		stop()
	}()
	select {
	case <-client.Synced():
	case <-ctx.Done():
		fail("no listeners and clusters from %s within %v", *xds, *timeout)
	}
	for !s.complete() {
		select {
		case <-s.changed:
		case <-ctx.Done():
			fail("not every route configuration the listeners name arrived from %s within %v", *xds, *timeout)
		}
	}
	print(s)
	for *watch {
		select {
		case <-s.changed:
		case <-runCtx.Done():
			fail("the stream from %s ended", *xds)
		}
		// A push arrives as several responses (listeners, then the routes they name): print once they settle.
		for quiet := false; !quiet || !s.complete(); {
			select {
			case <-s.changed:
				quiet = false
			case <-time.After(100 * time.Millisecond):
				quiet = true
			case <-runCtx.Done():
				fail("the stream from %s ended", *xds)
			}
		}
		print(s)
	}
}

func print(s *state) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := struct {
		Listeners []listenerSummary `json:"listeners"`
		Clusters  []string          `json:"clusters"`
		Routes    []json.RawMessage `json:"routes"`
	}{Listeners: []listenerSummary{}, Clusters: []string{}, Routes: []json.RawMessage{}}
	for _, l := range s.listeners {
		out.Listeners = append(out.Listeners, l)
	}
	sort.Slice(out.Listeners, func(i, j int) bool { return out.Listeners[i].Name < out.Listeners[j].Name })
	for c, present := range s.clusters {
		if present {
			out.Clusters = append(out.Clusters, c)
		}
	}
	sort.Strings(out.Clusters)
	names := make([]string, 0, len(s.routes))
	for n := range s.routes {
		names = append(names, n)
	}
	sort.Strings(names)
	marshal := protojson.MarshalOptions{UseProtoNames: true}
	for _, n := range names {
		b, err := marshal.Marshal(s.routes[n])
		if err != nil {
			fail("route configuration %s: %v", n, err)
		}
		out.Routes = append(out.Routes, b)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("writing JSON: %v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "xds-dump: "+format+"\n", args...)
	os.Exit(1)
}
