// Package pages holds the page plumbing the buyer pages, the merchant
// admin and the operator console share: static files served under
// content-hashed names, and rendering a template into a buffer before
// anything is written.
package pages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

// Assets are the files of one folder, each served under a name carrying a
// hash of its content, so browsers may cache them forever and a new
// binary busts the cache.
type Assets struct {
	files map[string]asset  // by served name ("app.1a2b3c4d5e.css")
	urlOf map[string]string // file name → URL path
}

type asset struct {
	body        []byte
	contentType string
}

// LoadAssets reads every file of dir in fsys (an embedded folder: a
// failure is a programming error and panics); urlPrefix is where they
// are served ("/static/").
func LoadAssets(fsys fs.FS, dir, urlPrefix string) *Assets {
	a := &Assets{files: map[string]asset{}, urlOf: map[string]string{}}
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		body, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(e.Name())
		served := strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:5]) + ext
		ctype := mime.TypeByExtension(ext)
		switch ext { // the system MIME table may lack or differ on these
		case ".css":
			ctype = "text/css; charset=utf-8"
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		}
		a.files[served] = asset{body: body, contentType: ctype}
		a.urlOf[e.Name()] = urlPrefix + served
	}
	return a
}

// URL is the served path of a file by its name in the folder ("" when
// there is none), for templates.
func (a *Assets) URL(name string) string { return a.urlOf[name] }

// Serve writes the file with the served name, cacheable forever; false
// when there is none (nothing is written then).
func (a *Assets) Serve(rw http.ResponseWriter, r *http.Request, served string) bool {
	f, ok := a.files[served]
	if !ok {
		return false
	}
	rw.Header().Set("Content-Type", f.contentType)
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	rw.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	http.ServeContent(rw, r, "", time.Time{}, bytes.NewReader(f.body))
	return true
}

// Render executes t into a buffer first and writes the page only when
// that worked, so a template error can still become a clean 500 (the
// caller's, with the error returned here) instead of half a page.
func Render(rw http.ResponseWriter, t *template.Template, status int, data any) error {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return err
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.WriteHeader(status)
	_, _ = buf.WriteTo(rw) // a write error is the client gone: nothing to do
	return nil
}
