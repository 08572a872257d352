package kubernetes

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/kustomize/api/krusty"
	kusttypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// decoder is the API server's strict decoding for the kinds these
// manifests may use: an unknown, duplicated or miscased field is an error,
// and so is any other kind.
var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		appsv1.AddToScheme, corev1.AddToScheme, batchv1.AddToScheme,
		policyv1.AddToScheme, autoscalingv2.AddToScheme, networkingv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// documents splits a YAML stream, dropping empty documents.
func documents(b []byte) [][]byte {
	var out [][]byte
	for doc := range bytes.SplitSeq(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			out = append(out, doc)
		}
	}
	return out
}

func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}

// decodeObjects decodes every document of a manifest strictly.
func decodeObjects(name string, b []byte) ([]runtime.Object, []string) {
	var objs []runtime.Object
	var problems []string
	for i, doc := range documents(b) {
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: document %d: %v", name, i+1, err))
			continue
		}
		objs = append(objs, obj)
	}
	return objs, problems
}

// decodeFile decodes one file under the manifest tree: a kustomization
// into kustomize's own type, anything else (resources and patches alike)
// into the Kubernetes types.
func decodeFile(fsys filesys.FileSystem, file string) []string {
	b, err := fsys.ReadFile(file)
	if err != nil {
		return []string{err.Error()}
	}
	if path.Base(file) == "kustomization.yaml" {
		var k kusttypes.Kustomization
		if err := yaml.UnmarshalStrict(b, &k); err != nil {
			return []string{fmt.Sprintf("%s: %v", file, err)}
		}
		return nil
	}
	_, problems := decodeObjects(file, b)
	return problems
}

// yamlFiles lists the YAML files and the kustomization directories under root.
func yamlFiles(fsys filesys.FileSystem, root string) (files, kustomizations []string, err error) {
	err = fsys.Walk(root, func(p string, info fs.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		switch {
		case path.Base(p) == "kustomization.yaml":
			kustomizations = append(kustomizations, path.Dir(p))
			fallthrough
		case strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml"):
			files = append(files, p)
		}
		return nil
	})
	slices.Sort(files)
	slices.Sort(kustomizations)
	return files, kustomizations, err
}

// build runs kustomize as `kubectl apply -k dir` would and decodes what it
// produces strictly.
func build(fsys filesys.FileSystem, dir string) ([]runtime.Object, []string) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
	if err != nil {
		return nil, []string{fmt.Sprintf("kustomize build %s: %v", dir, err)}
	}
	b, err := m.AsYaml()
	if err != nil {
		return nil, []string{fmt.Sprintf("kustomize build %s: %v", dir, err)}
	}
	return decodeObjects("kustomize build "+dir, b)
}
