package mock

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Member is a member of a corp's directory (通讯录成员) as the Server keeps
// it: what user/get answers, and what the directory's writes change.
type Member struct {
	UserID      string
	Name        string
	Departments []int
	Position    string
	Mobile      string
	Gender      string // "0" unset, "1" male, "2" female: a string, as WeCom sends it
	Email       string
	BizMail     string
	Alias       string
	Telephone   string
	Address     string
	Avatar      string
	Status      int // 1 active (the default), 2 disabled, 4 not active, 5 retired
}

// Department is a department of a corp's directory.
type Department struct {
	ID       int
	Name     string
	NameEn   string
	ParentID int // 0 for the root, 1
	Order    int
}

// directory is a corp's members and departments. Its members are also in
// the corp's set of userids (contacts.users), which the tag APIs read, and
// its departments in contacts.parties: every write below keeps both.
type directory struct {
	members map[string]*Member // by userid in lower case, as WeCom compares them
	depts   map[int]*Department
	// withheld: user/get leaves out the fields WeCom withholds from apps
	// created after 2022-06-20 (WithholdMemberFields).
	withheld bool
	// listsClosed: user/list and user/simplelist answer 48009, as to the
	// contact-sync secret from an IP added after 2022-08-15.
	listsClosed bool
}

// dir returns the corp's directory, made on first use with its root
// department (1).
func (c *corp) dir() *directory {
	if c.directory == nil {
		c.directory = &directory{members: make(map[string]*Member), depts: make(map[int]*Department)}
		c.putDepartment(Department{ID: 1, Name: c.id})
	}
	return c.directory
}

// putMember adds or replaces a member.
func (c *corp) putMember(m Member) {
	if m.Status == 0 {
		m.Status = 1
	}
	if len(m.Departments) == 0 {
		m.Departments = []int{1}
	}
	c.dir().members[strings.ToLower(m.UserID)] = &m
	c.users[m.UserID] = true
}

// removeMember deletes member userID; it reports whether there was one.
func (c *corp) removeMember(userID string) bool {
	m, ok := c.dir().members[strings.ToLower(userID)]
	if ok {
		delete(c.directory.members, strings.ToLower(userID))
		delete(c.users, m.UserID)
	}
	return ok
}

func (c *corp) putDepartment(d Department) {
	c.dir().depts[d.ID] = &d
	c.parties[d.ID] = true
}

// member returns member userID, or nil.
func (c *corp) member(userID string) *Member { return c.dir().members[strings.ToLower(userID)] }

// sortedMembers returns the members by userid: user/list_id's order, in
// which the rows of one member are adjacent.
func (c *corp) sortedMembers() []*Member {
	ms := make([]*Member, 0, len(c.dir().members))
	for _, m := range c.directory.members {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *Member) int { return cmp.Compare(a.UserID, b.UserID) })
	return ms
}

// AddMembers adds members (or replaces those of the same userid) to a
// corp's directory, creating the departments they name that do not exist
// yet under the root.
func (s *Server) AddMembers(corpID string, ms ...Member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	for _, m := range ms {
		for _, d := range m.Departments {
			if c.dir().depts[d] == nil {
				c.putDepartment(Department{ID: d, Name: "department " + strconv.Itoa(d), ParentID: 1})
			}
		}
		c.putMember(m)
	}
}

// AddDepartments adds departments (or replaces those of the same id) to a
// corp's directory.
func (s *Server) AddDepartments(corpID string, ds ...Department) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	for _, d := range ds {
		c.putDepartment(d)
	}
}

// SeedDirectory fills a corp's directory with departments departments
// below the root (ids 2 on, eight to a parent) and members members
// ("user000001" on), each in one to three departments: the same directory
// for the same numbers, for tests and examples at any scale.
func (s *Server) SeedDirectory(corpID string, departments, members int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	ids := []int{1}
	for i := range departments {
		id := i + 2
		c.putDepartment(Department{ID: id, Name: fmt.Sprintf("department %d", id), ParentID: ids[i/8], Order: i})
		ids = append(ids, id)
	}
	for i := range members {
		n := i + 1
		depts := []int{ids[n%len(ids)]}
		for k := 1; k < 1+n%3 && k < len(ids); k++ {
			if d := ids[(n*7+k*13)%len(ids)]; !slices.Contains(depts, d) {
				depts = append(depts, d)
			}
		}
		c.putMember(Member{UserID: fmt.Sprintf("user%06d", n), Name: fmt.Sprintf("Member %06d", n), Departments: depts,
			Mobile: fmt.Sprintf("+86 138%08d", n), Email: fmt.Sprintf("user%06d@example.com", n), Gender: strconv.Itoa(n % 3)})
	}
}

// Members returns a corp's members, by userid.
func (s *Server) Members(corpID string) []Member {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Member
	for _, m := range s.corpLocked(corpID).sortedMembers() {
		out = append(out, *m)
	}
	return out
}

// Departments returns a corp's departments, by id.
func (s *Server) Departments(corpID string) []Department {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.corpLocked(corpID)
	out := make([]Department, 0, len(c.dir().depts))
	for _, d := range c.directory.depts {
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b Department) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// WithholdMemberFields makes user/get of a corp leave out what WeCom
// withholds from apps created after 2022-06-20: a member's mobile, gender,
// email, biz_mail, avatar, thumb_avatar, address and qr_code.
func (s *Server) WithholdMemberFields(corpID string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corpLocked(corpID).dir().withheld = on
}

// CloseContactLists makes user/list and user/simplelist of a corp answer
// 48009, as WeCom does to the contact-sync secret called from an IP added
// after 2022-08-15.
func (s *Server) CloseContactLists(corpID string, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corpLocked(corpID).dir().listsClosed = closed
}

// openIDOf is the WeChat Pay openid the Server gives a member: a digest of
// the corp and the userid, the same every time.
func openIDOf(corpID, userID string) string {
	sum := sha256.Sum256([]byte(corpID + "\x00" + strings.ToLower(userID)))
	return "o" + hex.EncodeToString(sum[:12])
}
