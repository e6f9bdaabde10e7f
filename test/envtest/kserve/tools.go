//go:build tools

package tools

import (
	_ "github.com/kserve/kserve/cmd/llmisvc"
	_ "github.com/kserve/kserve/cmd/localmodel"
	_ "github.com/kserve/kserve/cmd/localmodelnode"
	_ "github.com/kserve/kserve/cmd/manager"
)
