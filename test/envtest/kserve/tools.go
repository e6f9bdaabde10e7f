//go:build tools

package tools

import _ "github.com/kserve/kserve/cmd/manager"
