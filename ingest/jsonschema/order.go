package jsonschema

import (
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// onode is a JSON value that remembers the order of its object's keys;
// scalars are nil. The compiled schema keeps "properties" in a Go map, so
// Iceberg column order comes from here.
type onode struct {
	keys []string // object keys in text order
	obj  map[string]*onode
	arr  []*onode
}

// parseOrdered parses a JSON text into an onode tree.
func parseOrdered(text string) (*onode, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	n, err := readOrdered(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON value")
	}

	return n, nil
}

func readOrdered(dec *json.Decoder) (*onode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		n := &onode{obj: map[string]*onode{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			child, err := readOrdered(dec)
			if err != nil {
				return nil, err
			}
			if _, dup := n.obj[k]; !dup {
				n.keys = append(n.keys, k)
			}
			n.obj[k] = child
		}
		_, err := dec.Token() // '}'

		return n, err
	case json.Delim('['):
		n := &onode{}
		for dec.More() {
			child, err := readOrdered(dec)
			if err != nil {
				return nil, err
			}
			n.arr = append(n.arr, child)
		}
		_, err := dec.Token() // ']'

		return n, err
	}

	return nil, nil
}

// at returns the node at a URL fragment holding a JSON pointer
// ("/properties/a%20b/items"), or nil.
func (n *onode) at(fragment string) *onode {
	ptr, err := url.PathUnescape(fragment)
	if err != nil {
		return nil
	}
	if ptr == "" {
		return n
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil // an anchor, not a pointer
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		if n == nil {
			return nil
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch {
		case n.obj != nil:
			n = n.obj[tok]
		case n.arr != nil:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n.arr) {
				return nil
			}
			n = n.arr[i]
		default:
			return nil
		}
	}

	return n
}

// propertyOrder returns the keys of the "properties" object of the schema
// at location ("<document url>#<json pointer>") in text order, or nil when
// the location cannot be found in docs.
func propertyOrder(docs map[string]*onode, location string) []string {
	u, frag, _ := strings.Cut(location, "#")
	doc := docs[u]
	if doc == nil {
		return nil
	}
	n := doc.at(frag)
	if n == nil || n.obj == nil || n.obj["properties"] == nil {
		return nil
	}

	return n.obj["properties"].keys
}
