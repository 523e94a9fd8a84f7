package mock

// AddCustomers makes externalUserIDs customers of member userID in corp
// corpID (a customer may be followed by several members).
func (s *Server) AddCustomers(corpID, userID string, externalUserIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	set := c.customers[userID]
	if set == nil {
		set = make(map[string]bool)
		c.customers[userID] = set
	}
	for _, e := range externalUserIDs {
		set[e] = true
	}
}

type followUsersAnswer struct {
	status
	FollowUser []string `json:"follow_user"`
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
		return nil, errf(codeUserIDMissing, "missing userid")
	}
	ids := sortedKeys(c.customers[u])
	if len(ids) == 0 {
		return nil, errf(codeNoCustomers, "not external contact")
	}
	return customerListAnswer{status: okStatus("ok"), ExternalUserID: ids}, nil
}
