package bench

import (
	"encoding/json"
	"io"
)

// SchemaVersion names the JSON layout documented in the package comment.
const SchemaVersion = "iovfs-bench/1"

// File is the JSON document that --json writes.
type File struct {
	Schema      string           `json:"schema"`
	Machine     Machine          `json:"machine"`
	Experiments []ExperimentJSON `json:"experiments"`
}

// ExperimentJSON is one experiment's results in a File.
type ExperimentJSON struct {
	Name         string            `json:"name"`
	Baseline     string            `json:"baseline"`
	Loops        int               `json:"loops"`
	OpsPerRound  int               `json:"ops_per_round"`
	Size         int               `json:"size"`
	Turns        int               `json:"turns"`
	Extra        map[string]string `json:"extra,omitempty"`
	LockOSThread bool              `json:"lock_os_thread"`
	// Clock is what timed the rounds: "wall" or "thread-cpu".
	Clock     string          `json:"clock"`
	Variants  []VariantJSON   `json:"variants"`
	Ratios    []RatioJSON     `json:"ratios"`
	Skipped   []SkippedJSON   `json:"skipped"`
	Reference []ReferenceJSON `json:"reference"`
	// Matrix holds the matrix experiment's cells; absent for the others.
	Matrix *MatrixJSON `json:"matrix,omitempty"`
}

// VariantJSON is one variant's results.
type VariantJSON struct {
	Name          string    `json:"name"`
	NsPerOp       float64   `json:"ns_per_op"`
	CI95Low       float64   `json:"ci95_low"`
	CI95High      float64   `json:"ci95_high"`
	MinNsPerOp    float64   `json:"min_ns_per_op"`
	MaxNsPerOp    float64   `json:"max_ns_per_op"`
	AllocsPerOp   float64   `json:"allocs_per_op"`
	BytesPerOp    float64   `json:"bytes_per_op"`
	WarmupSeconds float64   `json:"warmup_seconds"`
	RoundSeconds  []float64 `json:"round_seconds"`
}

// RatioJSON is the ratio of variant A to variant B.
type RatioJSON struct {
	A           string  `json:"a"`
	B           string  `json:"b"`
	Median      float64 `json:"median"`
	CI95Low     float64 `json:"ci95_low"`
	CI95High    float64 `json:"ci95_high"`
	BeyondNoise bool    `json:"beyond_noise"`
}

// SkippedJSON is a variant that did not run.
type SkippedJSON struct {
	Variant string `json:"variant"`
	Reason  string `json:"reason"`
}

// ReferenceJSON is a published figure.
type ReferenceJSON struct {
	Label   string  `json:"label"`
	Variant string  `json:"variant"`
	NsPerOp float64 `json:"ns_per_op"`
}

// JSON converts res to its JSON form.
func (res *Result) JSON() ExperimentJSON {
	x := ExperimentJSON{
		Name:         res.Experiment.Name,
		Baseline:     res.Experiment.Baseline,
		Loops:        res.Params.Loops,
		OpsPerRound:  res.Params.Ops,
		Size:         res.Params.Size,
		Turns:        res.Params.Turns,
		Extra:        res.Params.Extra,
		LockOSThread: res.LockOSThread,
		Clock:        map[bool]string{false: "wall", true: "thread-cpu"}[res.ThreadCPU],
		Variants:     []VariantJSON{},
		Ratios:       []RatioJSON{},
		Skipped:      []SkippedJSON{},
		Reference:    []ReferenceJSON{},
	}
	for _, v := range res.Variants {
		x.Variants = append(x.Variants, v.json())
	}
	for _, r := range res.Ratios {
		x.Ratios = append(x.Ratios, RatioJSON{r.A, r.B, r.Median, r.CI.Low, r.CI.High, r.BeyondNoise()})
	}
	for _, s := range res.Skipped {
		x.Skipped = append(x.Skipped, SkippedJSON(s))
	}
	for _, ref := range res.Experiment.Reference {
		x.Reference = append(x.Reference, ReferenceJSON(ref))
	}
	if res.Matrix != nil {
		x.Matrix = res.Matrix.json()
	}
	return x
}

func (v *VariantResult) json() VariantJSON {
	secs := make([]float64, len(v.Rounds))
	for i, d := range v.Rounds {
		secs[i] = d.Seconds()
	}
	return VariantJSON{
		Name:          v.Name,
		NsPerOp:       v.NsPerOp,
		CI95Low:       v.CI.Low,
		CI95High:      v.CI.High,
		MinNsPerOp:    v.Min,
		MaxNsPerOp:    v.Max,
		AllocsPerOp:   v.AllocsPerOp,
		BytesPerOp:    v.BytesPerOp,
		WarmupSeconds: v.Warmup.Seconds(),
		RoundSeconds:  secs,
	}
}

// WriteJSON writes the results of one or more experiments as a File.
func WriteJSON(w io.Writer, results []*Result) error {
	f := File{Schema: SchemaVersion, Machine: ThisMachine(), Experiments: []ExperimentJSON{}}
	for _, res := range results {
		f.Experiments = append(f.Experiments, res.JSON())
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}
