package mock

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/wecomkit/wecom/catalog"
)

// customerBook is a corp's customers (客户), their followers and the
// members' remarks on them.
type customerBook struct {
	// people: external_userid → the customer.
	people map[string]*Customer
	// customers: member → external_userid → the member's relation to that
	// customer.
	customers map[string]map[string]*follow
	remarks   map[markKey]Remark
}

func newCustomerBook() customerBook {
	return customerBook{people: make(map[string]*Customer), customers: make(map[string]map[string]*follow), remarks: make(map[markKey]Remark)}
}

// Customer is a customer (external contact, 外部联系人) as held by a Server.
type Customer struct {
	ExternalUserID string
	Name           string
	// Type is 1 for a WeChat user, 2 for a WeCom user.
	Type int
	// Gender is 0 unknown, 1 male, 2 female.
	Gender   int
	UnionID  string
	CorpName string // for a WeCom user (Type 2)
}

// follow is one member's relation to a customer (follow_user / follow_info).
type follow struct {
	created    int64 // unix seconds
	addWay     int
	state      string
	operUserID string
}

// AddCustomer adds (or replaces) a customer and makes it a customer of
// every member in followers. A follow that already exists is kept as it is.
func (s *Server) AddCustomer(corpID string, cu Customer, followers ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corpLocked(corpID).addCustomer(cu, s.now().Unix(), followers...)
}

// addCustomer adds (or replaces) cu and makes it a customer of followers
// at unix time now.
func (c *corp) addCustomer(cu Customer, now int64, followers ...string) {
	p := cu
	c.people[cu.ExternalUserID] = &p
	for _, u := range followers {
		c.addFollow(u, cu.ExternalUserID, now)
	}
}

// AddCustomers makes externalUserIDs customers of member userID in corp
// corpID (a customer may be followed by several members). A customer the
// Server does not hold yet is made up: a WeChat user named after its id.
func (s *Server) AddCustomers(corpID, userID string, externalUserIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	now := s.now().Unix()
	for _, e := range externalUserIDs {
		if c.people[e] == nil {
			c.people[e] = &Customer{ExternalUserID: e, Name: "customer " + e, Type: 1}
		}
		c.addFollow(userID, e, now)
	}
}

// Customers returns the external_userids of member userID's customers,
// sorted; nil when there are none.
func (s *Server) Customers(corpID, userID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corps[corpID]
	if c == nil {
		return nil
	}
	return sortedKeys(c.followed(userID))
}

// addFollow makes ext a customer of user, at unix time now, unless it is.
func (c *corp) addFollow(user, ext string, now int64) {
	set := c.customers[user]
	if set == nil {
		set = make(map[string]*follow)
		c.customers[user] = set
	}
	if set[ext] == nil {
		set[ext] = &follow{created: now, addWay: 1, operUserID: user}
	}
}

// removeFollow ends user's relation to ext.
func (c *corp) removeFollow(user, ext string) {
	delete(c.customers[user], ext)
	if len(c.customers[user]) == 0 {
		delete(c.customers, user)
	}
}

// followed returns the set of user's customers, for sortedKeys.
func (c *corp) followed(user string) map[string]bool {
	set := c.customers[user]
	if len(set) == 0 {
		return nil
	}
	m := make(map[string]bool, len(set))
	for e := range set {
		m[e] = true
	}
	return m
}

// followers returns the members who follow ext, sorted.
func (c *corp) followers(ext string) []string {
	m := make(map[string]bool)
	for u, set := range c.customers {
		if set[ext] != nil {
			m[u] = true
		}
	}
	return sortedKeys(m)
}

// CustomerSeed describes customers for SeedCustomers to make up.
type CustomerSeed struct {
	// Members is how many members have customers (default 3), named
	// MemberPrefix followed by a number ("member001", ...).
	Members      int
	MemberPrefix string
	// Pairs is how many (member, customer) pairs to make (default 2,000).
	Pairs int
	// Shared is the fraction of customers also followed by the next member
	// (default 0: none). Each such customer makes two pairs.
	Shared float64
	// WideFollowers, when positive, adds one more customer followed by that
	// many members of its own ("wide001", ...): over 500 makes
	// externalcontact/get page its followers. Its pairs are not counted in
	// Pairs.
	WideFollowers int
	// Seed makes the ids (0 means 1): the same seed makes the same
	// customers.
	Seed int64
}

// Seeded is what SeedCustomers made.
type Seeded struct {
	// Members are the members with customers, sorted (WideFollowers'
	// included).
	Members []string
	// Pairs counts every (member, customer) pair made.
	Pairs int
	// Customers counts the customers made.
	Customers int
}

// SeedCustomers makes up customers in corp corpID as seed describes, and
// returns what it made. Seeding twice with one seed adds nothing new.
func (s *Server) SeedCustomers(corpID string, seed CustomerSeed) Seeded {
	seed = seed.withDefaults()
	rng := rand.New(rand.NewPCG(uint64(seed.Seed), 0x5eed))
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	now := s.now().Unix()
	member := func(i int) string { return fmt.Sprintf("%s%03d", seed.MemberPrefix, i%seed.Members+1) }
	var out Seeded
	members := make(map[string]bool)
	add := func(cu Customer, followers ...string) {
		p := cu
		c.people[cu.ExternalUserID] = &p
		for _, u := range followers {
			c.addFollow(u, cu.ExternalUserID, now-int64(rng.IntN(int(365*24*time.Hour/time.Second))))
			members[u] = true
		}
		out.Customers++
		out.Pairs += len(followers)
	}
	for i := 0; out.Pairs < seed.Pairs; i++ {
		followers := []string{member(i)}
		if seed.Members > 1 && out.Pairs+2 <= seed.Pairs && rng.Float64() < seed.Shared {
			followers = append(followers, member(i+1))
		}
		add(seededCustomer(rng, i), followers...)
	}
	if seed.WideFollowers > 0 {
		wide := make([]string, seed.WideFollowers)
		for i := range wide {
			wide[i] = fmt.Sprintf("wide%03d", i+1)
		}
		add(seededCustomer(rng, -1), wide...)
	}
	out.Members = sortedKeys(members)
	return out
}

func (seed CustomerSeed) withDefaults() CustomerSeed {
	if seed.Members <= 0 {
		seed.Members = 3
	}
	if seed.MemberPrefix == "" {
		seed.MemberPrefix = "member"
	}
	if seed.Pairs <= 0 {
		seed.Pairs = 2000
	}
	if seed.Seed == 0 {
		seed.Seed = 1
	}
	return seed
}

// seededCustomer makes up customer number i.
func seededCustomer(rng *rand.Rand, i int) Customer {
	cu := Customer{
		ExternalUserID: fmt.Sprintf("wm%012x", rng.Uint64()>>16),
		Name:           fmt.Sprintf("客户%d", i+1),
		Type:           1,
		Gender:         rng.IntN(3),
	}
	if i%5 == 4 {
		cu.Type, cu.CorpName = 2, "企业"+cu.ExternalUserID[2:6]
	} else {
		cu.UnionID = "o" + cu.ExternalUserID[2:]
	}
	return cu
}

type followUsersAnswer struct {
	status
	FollowUser []string `json:"follow_user"`
}

// Customers registers the members who have customers, and a member's
// customers.
func (handlerSets) Customers() handlers {
	return handlers{
		catalog.FollowUserList: (*corp).followUserList,
		catalog.CustomerList:   (*corp).customerList,
	}
}

// followUserList answers the members who have customers.
func (c *corp) followUserList(*input) (any, *apiError) {
	users := sortedKeys(c.customersOf())
	if users == nil {
		users = []string{}
	}
	return followUsersAnswer{status: okStatus("ok"), FollowUser: users}, nil
}

// customersOf returns the set of members with at least one customer.
func (c *corp) customersOf() map[string]bool {
	m := make(map[string]bool)
	for u, set := range c.customers {
		if len(set) > 0 {
			m[u] = true
		}
	}
	return m
}

type customerListAnswer struct {
	status
	ExternalUserID []string `json:"external_userid"`
}

// customerList answers a member's customers, or 84061 when there are none,
// as WeCom does.
func (c *corp) customerList(in *input) (any, *apiError) {
	u := in.query.Get("userid")
	if u == "" {
		return nil, errf(catalog.CodeUserIDMissing, "missing userid")
	}
	ids := sortedKeys(c.followed(u))
	if len(ids) == 0 {
		return nil, errf(catalog.CodeNoCustomers, "not external contact")
	}
	return customerListAnswer{status: okStatus("ok"), ExternalUserID: ids}, nil
}
