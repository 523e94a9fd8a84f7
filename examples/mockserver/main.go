// Command mockserver serves the mock WeCom over HTTP, for running several
// processes (examples/bulktag copies, say) against one fake WeCom:
//
//	go run ./examples/mockserver -addr 127.0.0.1:8099 -latency 20ms
//	go run ./examples/bulktag -base-url http://127.0.0.1:8099 -redis 127.0.0.1:6379 &   # three times
//
// With -directory it seeds a directory for examples/directory:
//
//	go run ./examples/mockserver -directory 12000
//	go run ./examples/directory -base-url http://127.0.0.1:8099 -corp-id wwbulktag -secret bulktag-secret
//
// With -customers it seeds made-up customers for bulktag's -all-members
// (-customers 2000 -customer-members 3 -shared 0.1 -wide 0):
//
//	go run ./examples/mockserver -customers 2000
//	go run ./examples/bulktag -base-url http://127.0.0.1:8099 -all-members
//
// With -suite-corps it seeds examples/provider's suite and corps, and
// -ip-per-minute sets WeCom's per-IP window of an API across every corp;
// POST /mock/install (form: url, token, key of the suite's command URL)
// then pushes the suite_ticket and every corp's create_auth to it (see
// bench/providers.sh):
//
//	go run ./examples/mockserver -suite-corps 1000 -suite-customers 50 -ip-per-minute 40000 -latency 1s
//
// Besides the WeCom API under /cgi-bin/, GET /mock/stats answers the mock's
// counters as JSON (calls, max in flight, refusals by errcode, gettoken calls,
// successful marks), and POST /mock/reset-stats zeroes them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wecomkit/wecom/mock"
)

// StatsPath is where the counters are served.
const StatsPath = "/mock/stats"

func main() {
	addr := flag.String("addr", "127.0.0.1:8099", "listen address (loopback)")
	latency := flag.Duration("latency", 20*time.Millisecond, "service time of every API call")
	jitter := flag.Duration("jitter", 0, "spread of the service time: each call's is drawn uniformly from latency±jitter")
	corpID := flag.String("corp-id", "wwbulktag", "corp id of the registered app")
	secret := flag.String("secret", "bulktag-secret", "secret of the registered app")
	users := flag.Int("users", 0, "register users user0..userN-1 in the contact directory")
	directory := flag.Int("directory", 0, "seed the directory with this many members (user000001, ...) in 100 departments, for examples/directory")
	var seed mock.CustomerSeed
	flag.IntVar(&seed.Pairs, "customers", 0, "seed this many made-up (member, customer) pairs (0: none)")
	flag.IntVar(&seed.Members, "customer-members", 3, "members the seeded customers belong to (member001, ...)")
	flag.Float64Var(&seed.Shared, "shared", 0.1, "fraction of the seeded customers two members share")
	flag.IntVar(&seed.WideFollowers, "wide", 0, "with -customers, also seed one customer followed by this many members (wide001, ...)")
	flag.Int64Var(&seed.Seed, "seed", 1, "seed of the made-up customers and of fault injection")
	var suite suiteSeed
	flag.IntVar(&suite.corps, "suite-corps", 0, "seed examples/provider's suite and this many corps that may install it (0: none)")
	flag.IntVar(&suite.customers, "suite-customers", 50, "with -suite-corps, customers of each corp")
	ipPerMinute := flag.Int("ip-per-minute", 0, "WeCom's per-IP window of an API, a minute, across every corp (0: none)")
	flag.Parse()
	suite.latency = *latency
	cfg := mock.Config{Latency: *latency, LatencyJitter: *jitter, Seed: seed.Seed}
	if *ipPerMinute > 0 {
		cfg.IPWindows = []mock.Window{{Limit: *ipPerMinute, Period: time.Minute}}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *addr, cfg, *corpID, *secret, *users, *directory, seed, suite); err != nil {
		fmt.Fprintln(os.Stderr, "mockserver:", err)
		os.Exit(1)
	}
}

// Handler returns the mock's API, its counters and the install of the
// seeded suite on one handler.
func Handler(m *mock.Server, suite suiteSeed) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/cgi-bin/", m.Handler())
	mux.HandleFunc("GET "+StatsPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.Stats())
	})
	mux.HandleFunc("POST /mock/reset-stats", func(w http.ResponseWriter, _ *http.Request) {
		m.ResetStats()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /mock/install", suite.install(m))
	return mux
}

func serve(ctx context.Context, addr string, cfg mock.Config, corpID, secret string, users, members int, seed mock.CustomerSeed, suite suiteSeed) error {
	m, err := mock.New(cfg)
	if err != nil {
		return err
	}
	m.AddApp(corpID, secret)
	for i := range users {
		m.AddUsers(corpID, fmt.Sprintf("user%d", i))
	}
	if members > 0 {
		m.SeedDirectory(corpID, 100, members)
		fmt.Printf("seeded a directory of %d members in 100 departments\n", members)
	}
	if seed.Pairs > 0 {
		s := m.SeedCustomers(corpID, seed)
		fmt.Printf("seeded %d customers of %d members: %d pairs\n", s.Customers, len(s.Members), s.Pairs)
	}
	suite.add(m)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: Handler(m, suite), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("mock WeCom at http://%s (latency %s ± %s, app %s)\n", ln.Addr(), cfg.Latency, cfg.LatencyJitter, corpID)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
