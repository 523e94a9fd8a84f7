// The media endpoints beside media/upload and media/get: an image uploaded
// for a permanent URL (media/uploadimg), and the voice a JS-SDK page
// uploaded (media/get/jssdk).

package wecom

import (
	"context"
	"fmt"
	"io"

	"github.com/wecomkit/wecom/catalog"
)

// ImageRequest is an image to upload for a permanent URL (media/uploadimg,
// document/path/90256): a jpg or png over 5 bytes and at most 2 MB.
type ImageRequest struct {
	// Filename is the image's name, sent as it is in UTF-8.
	Filename string
	// Body is the image, streamed as it is read; an io.ReadSeeker is
	// rewound to retry a failed attempt, as UploadRequest's.
	Body io.Reader
	// Size is the image's length in bytes. Zero: Body's length, when it
	// says it.
	Size int64
}

type imageAnswer struct {
	URL string `json:"url"`
}

func (a *imageAnswer) validate() error {
	if a.URL == "" {
		return fmt.Errorf("no url")
	}
	return nil
}

// UploadImage uploads an image, streamed from req.Body, and returns its
// URL, valid for good: for the images of messages and pages, where a
// media_id's three days would not do. WeCom takes at most 1,000 a day and
// 3,000 a month per corp, a day and a month of China Standard Time: the
// client counts them (catalog.RulePerDay, catalog.RulePerMonth) and refuses
// the call beyond, unsent, with a *RateLimitError whose RetryAfter runs to
// the next CST midnight or month; with WithWaitOnRateLimit it waits that
// long instead when ctx's deadline allows it. Every attempt counts, as
// WeCom counts every upload that arrives.
func (s *MediaService) UploadImage(ctx context.Context, req ImageRequest) (string, error) {
	file := UploadRequest{Type: MediaImage, Filename: req.Filename, Body: req.Body, Size: req.Size}
	size, err := file.checkFile(catalog.MediaUploadImageBytes)
	if err != nil {
		return "", err
	}
	var out imageAnswer
	if err := postFile(ctx, s.p, catalog.MediaUploadImage, nil, file, size, &out); err != nil {
		return "", err
	}
	return out.URL, nil
}

// DownloadVoice writes the voice mediaID names, which a JS-SDK page
// uploaded (wx.uploadVoice's serverId), to w as it arrives
// (media/get/jssdk, document/path/90255): speex at 16 kHz, clearer than
// the AMR that Download fetches for the same media_id. It streams, resumes
// and retries as Download does.
func (s *MediaService) DownloadVoice(ctx context.Context, mediaID string, w io.Writer) (DownloadedFile, error) {
	return fetchFile(ctx, s.p, catalog.MediaGetJSSDK, mediaID, w)
}
