package wecom

import (
	"context"
	"errors"
	"net/url"
	"strconv"

	"github.com/wecomkit/wecom/catalog"
)

// DepartmentService calls the directory's department (部门) APIs.
type DepartmentService service

// DepartmentNode is a department as department/simplelist names it.
type DepartmentNode struct {
	ID       int `json:"id"`
	ParentID int `json:"parentid"`
	Order    int `json:"order"`
}

// List returns department id and every department below it, or the whole
// tree the app can see for id 0 (department/simplelist,
// document/path/95350). Names are read with Get.
func (s *DepartmentService) List(ctx context.Context, id int) ([]DepartmentNode, error) {
	if id < 0 {
		return nil, invalid("id", "%d is negative", id)
	}
	var q url.Values
	if id > 0 {
		q = url.Values{"id": {strconv.Itoa(id)}}
	}
	var out struct {
		DepartmentID []DepartmentNode `json:"department_id"`
	}
	if err := s.p.perform(ctx, &call{id: catalog.DepartmentSimpleList, query: q, out: &out}); err != nil {
		return nil, err
	}
	return out.DepartmentID, nil
}

// Get reads department id (department/get, document/path/95351).
func (s *DepartmentService) Get(ctx context.Context, id int) (*Department, error) {
	if id <= 0 {
		return nil, invalid("id", "%d is not positive", id)
	}
	var out departmentAnswer
	if err := s.p.perform(ctx, &call{id: catalog.DepartmentGet, query: url.Values{"id": {strconv.Itoa(id)}}, out: &out}); err != nil {
		return nil, err
	}
	return &out.Department, nil
}

type departmentAnswer struct {
	Department Department `json:"department"`
}

func (a *departmentAnswer) validate() error {
	if a.Department.ID == 0 {
		return errors.New("no department")
	}
	return nil
}

// DepartmentRequest is a department to create (department/create,
// document/path/90205) or the changes to one (department/update,
// document/path/90206): on an update, a zero or nil field is left as it
// is.
type DepartmentRequest struct {
	// ID names the department: chosen by WeCom on a create when zero.
	ID       int     `json:"id,omitempty"`
	Name     string  `json:"name,omitempty"`
	NameEn   *string `json:"name_en,omitempty"`
	ParentID int     `json:"parentid,omitempty"`
	Order    *int    `json:"order,omitempty"`
}

// Create adds a department and returns its id. It is not repeated after
// an answer that never came: a second create fails on the department the
// first made (60008, CodeDepartmentNameExists).
func (s *DepartmentService) Create(ctx context.Context, r DepartmentRequest) (int, error) {
	switch {
	case r.Name == "":
		return 0, invalid("name", "required")
	case r.ParentID <= 0:
		return 0, invalid("parentid", "%d is not positive (the root department is 1)", r.ParentID)
	case r.ID < 0:
		return 0, invalid("id", "%d is negative", r.ID)
	}
	var out departmentIDAnswer
	if err := s.p.perform(ctx, &call{id: catalog.DepartmentCreate, body: r, out: &out}); err != nil {
		return 0, err
	}
	return out.ID, nil
}

type departmentIDAnswer struct {
	ID int `json:"id"`
}

func (a *departmentIDAnswer) validate() error {
	if a.ID <= 0 {
		return errors.New("no department id")
	}
	return nil
}

// Update changes a department: only the fields r sets.
func (s *DepartmentService) Update(ctx context.Context, r DepartmentRequest) error {
	if r.ID <= 0 {
		return invalid("id", "%d is not positive", r.ID)
	}
	return s.p.perform(ctx, &call{id: catalog.DepartmentUpdate, body: r})
}

// Delete removes department id, which must have no member and no
// department below it (60005, 60006). It is not repeated after an answer
// that never came: a second delete fails on the department the first
// removed (60003, CodeDepartmentNotFound).
func (s *DepartmentService) Delete(ctx context.Context, id int) error {
	if id <= 1 {
		return invalid("id", "%d: the root department (1) cannot be deleted, and ids are positive", id)
	}
	return s.p.perform(ctx, &call{id: catalog.DepartmentDelete, query: url.Values{"id": {strconv.Itoa(id)}}})
}
