package wecom

// Ptr returns a pointer to v, for the optional fields of a request.
func Ptr[T any](v T) *T { return &v }

// Gender is a member's gender as the directory sends it: a string here
// ("1"), where the customer APIs send a number.
type Gender string

// The genders WeCom knows.
const (
	GenderUnset  Gender = "0"
	GenderMale   Gender = "1"
	GenderFemale Gender = "2"
)

// Member is a member of the corp's directory (通讯录成员), as user/get
// answers it (document/path/90196).
//
// Apps created after 2022-06-20 do not receive a member's Mobile, Gender,
// Email, BizMail, Avatar, ThumbAvatar, Address or QRCode (document/path/90196
// and 96067: they read them with the member's consent through
// auth/getuserdetail); third-party apps get the userid in place of Name.
// A field WeCom withholds is nil, while one it sends empty points to "":
// the two are told apart.
type Member struct {
	UserID string `json:"userid"`
	Name   string `json:"name"`
	// Departments are the ids of the member's departments; Order is the
	// member's order in each of them, and IsLeaderInDept whether the
	// member leads it (1) or not (0), both in the same order.
	Departments    []int    `json:"department"`
	Order          []int    `json:"order,omitempty"`
	IsLeaderInDept []int    `json:"is_leader_in_dept,omitempty"`
	DirectLeader   []string `json:"direct_leader,omitempty"`
	MainDepartment int      `json:"main_department,omitempty"`
	Position       string   `json:"position,omitempty"`
	Telephone      string   `json:"telephone,omitempty"`
	Alias          string   `json:"alias,omitempty"`
	// OpenUserID is the member's id across a provider's apps (third-party
	// apps only).
	OpenUserID string `json:"open_userid,omitempty"`
	// Status is 1 active, 2 disabled, 4 not yet active, 5 retired.
	Status           int    `json:"status,omitempty"`
	ExternalPosition string `json:"external_position,omitempty"`

	Mobile      *string `json:"mobile,omitempty"`
	Gender      *Gender `json:"gender,omitempty"`
	Email       *string `json:"email,omitempty"`
	BizMail     *string `json:"biz_mail,omitempty"`
	Avatar      *string `json:"avatar,omitempty"`
	ThumbAvatar *string `json:"thumb_avatar,omitempty"`
	Address     *string `json:"address,omitempty"`
	QRCode      *string `json:"qr_code,omitempty"`

	ExtAttr         *ExtAttrs        `json:"extattr,omitempty"`
	ExternalProfile *ExternalProfile `json:"external_profile,omitempty"`
}

// ExtAttrs are a member's extended attributes (自定义字段).
type ExtAttrs struct {
	Attrs []Attr `json:"attrs"`
}

// The kinds of an extended or external attribute (Attr.Type).
const (
	AttrKindText        = 0
	AttrKindWeb         = 1
	AttrKindMiniprogram = 2
)

// Attr is one extended or external attribute: text, a web page or a
// miniprogram page, as its Type says.
type Attr struct {
	Type        int              `json:"type"`
	Name        string           `json:"name"`
	Text        *AttrText        `json:"text,omitempty"`
	Web         *AttrWebPage     `json:"web,omitempty"`
	Miniprogram *AttrMiniprogram `json:"miniprogram,omitempty"`
}

// AttrText is a text attribute's value.
type AttrText struct {
	Value string `json:"value"`
}

// AttrWebPage is a web attribute: a link.
type AttrWebPage struct {
	URL   string `json:"url"`
	Title string `json:"title"`
}

// AttrMiniprogram is a miniprogram attribute: a page of a miniprogram.
type AttrMiniprogram struct {
	AppID    string `json:"appid"`
	PagePath string `json:"pagepath"`
	Title    string `json:"title"`
}

// ExternalProfile is what customers see of a member (对外属性).
type ExternalProfile struct {
	ExternalCorpName string          `json:"external_corp_name,omitempty"`
	WechatChannels   *WechatChannels `json:"wechat_channels,omitempty"`
	ExternalAttr     []Attr          `json:"external_attr,omitempty"`
}

// WechatChannels is a member's WeChat Channels (视频号) account.
type WechatChannels struct {
	Nickname string `json:"nickname"`
	// Status is 0 unverified, 1 verified (read only).
	Status int `json:"status,omitempty"`
}

// Department is a department of the directory (document/path/95351).
type Department struct {
	ID       int    `json:"id"`
	Name     string `json:"name,omitempty"`
	NameEn   string `json:"name_en,omitempty"`
	ParentID int    `json:"parentid"`
	Order    int    `json:"order"`
	// Leaders are the userids of the department's leaders.
	Leaders []string `json:"department_leader,omitempty"`
}
