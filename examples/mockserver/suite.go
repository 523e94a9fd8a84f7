package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/wecomkit/wecom/mock"
)

// suiteSeed is a third-party suite and the corps that may install it, as
// examples/provider names them: suite wwprovsuite, corps wwprov0001...,
// each with customers wmprov0001c00001... of member001.
type suiteSeed struct {
	corps, customers int
	// latency is the mock's service time, which install restores.
	latency time.Duration
}

const (
	seedSuiteID, seedSuiteSecret = "wwprovsuite", "suite-secret-of-the-example"
	seedMember                   = "member001"
	// installBatch corps install the suite at once: their admins do not
	// all click in the same second, and a thousand command callbacks at
	// once would miss the second each has to be answered in.
	installBatch = 50
)

func seedCorpID(i int) string { return fmt.Sprintf("wwprov%04d", i+1) }

// add registers the suite (no ticket until one is pushed) and the corps'
// customers on m.
func (s suiteSeed) add(m *mock.Server) {
	if s.corps <= 0 {
		return
	}
	m.AddSuite(seedSuiteID, seedSuiteSecret, "")
	for i := range s.corps {
		ids := make([]string, s.customers)
		for j := range ids {
			ids[j] = fmt.Sprintf("wmprov%04dc%05d", i+1, j+1)
		}
		m.AddCustomers(seedCorpID(i), seedMember, ids...)
	}
	fmt.Printf("seeded suite %s and %d corps of %d customers each\n", seedSuiteID, s.corps, s.customers)
}

// install serves POST /mock/install: the form's url, token and key are the
// suite's command URL and its callback token and EncodingAESKey. The mock
// pushes a suite_ticket to it, then every seeded corp's create_auth
// (installBatch at a time), as
// WeCom does when their admins install the suite, and answers once all
// are delivered, as {"corps": N}. The calls the callbacks make
// (get_suite_token, get_permanent_code) are served at no latency while it
// runs: a command callback is answered within a second, or WeCom pushes it
// again, and a latency near that would make the install, not the marking
// afterwards, the test.
func (s suiteSeed) install(m *mock.Server) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.corps <= 0 {
			http.Error(w, "no suite seeded (-suite-corps)", http.StatusNotFound)
			return
		}
		cb := mock.CallbackConfig{URL: r.FormValue("url"), Token: r.FormValue("token"), EncodingAESKey: r.FormValue("key")}
		if u, err := url.Parse(cb.URL); err != nil || u.Host == "" {
			http.Error(w, "url: an absolute command URL is needed", http.StatusBadRequest)
			return
		}
		m.SetLatency(0)
		defer m.SetLatency(s.latency)
		err := m.SetSuiteCallback(seedSuiteID, cb)
		if err == nil {
			err = m.WaitCallbacks(r.Context()) // the ticket first
		}
		for i := 0; err == nil && i < s.corps; i++ {
			if _, err = m.Authorize(seedSuiteID, seedCorpID(i)); err == nil && (i+1)%installBatch == 0 {
				err = m.WaitCallbacks(r.Context())
			}
		}
		if err == nil {
			err = m.WaitCallbacks(r.Context())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int{"corps": s.corps})
	}
}
