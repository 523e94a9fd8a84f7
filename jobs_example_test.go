package wecom_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/wecomkit/wecom"
	"github.com/wecomkit/wecom/mock"
)

// Add two members from a CSV in WeCom's template with a batch job, and read
// its result once the job is done. The fake WeCom's clock is moved by hand
// here; Job.Wait polls (or takes the batch_job_result callback) instead.
func ExampleJobService_SyncUsers() {
	var mu sync.Mutex
	now := time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	m, err := mock.New(mock.Config{Now: clock})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	m.AddApp("wwexample", "example-secret")
	srv := m.Start()
	defer srv.Close()
	c, err := wecom.New("wwexample", "example-secret", wecom.WithBaseURL(srv.URL))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	file, err := wecom.UsersCSV(
		wecom.UserRow{Name: "张三", UserID: "zhangsan", Departments: []int{1}, Gender: wecom.GenderMale},
		wecom.UserRow{Name: "李四", UserID: "lisi", Departments: []int{7}},
	)
	if err != nil {
		log.Fatal(err)
	}
	job, err := c.Jobs.SyncUsers(ctx, wecom.JobRequest{CSV: bytes.NewReader(file), ToInvite: wecom.Ptr(false)})
	if err != nil {
		log.Fatal(err)
	}
	res, err := job.Result(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", res.Status, res.Percentage)

	mu.Lock()
	now = now.Add(mock.JobDuration)
	mu.Unlock()
	if res, err = job.Result(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("status:", res.Status, res.Percentage)
	for _, row := range res.Rows {
		fmt.Println(row.UserID, row.ErrCode, row.ErrMsg)
	}
	// Output:
	// status: 1 0
	// status: 3 100
	// zhangsan 0 ok
	// lisi 60003 department not found
}
