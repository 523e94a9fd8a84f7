package callback

// UploadMediaJobEvent is the end of a media/upload_by_url job (Event
// upload_media_job_finish, document/path/96219): it names the job only,
// whose result get_upload_by_url_result reads (wecom's MediaService.Job).
type UploadMediaJobEvent struct {
	Header
	JobID string `xml:"JobId"`
}
