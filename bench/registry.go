package bench

// experiments lists every experiment, in the order "iovfs bench" runs
// them. Adding an experiment is adding it here.
var experiments = []*Experiment{
	zeroExperiment,
	daxExperiment,
	wasiExperiment,
	pipeExperiment,
	pipePingPongExperiment,
	spliceExperiment,
	copyExperiment,
	walkExperiment,
	matrixExperiment,
	fuseExperiment,
}

// Experiments returns every registered experiment, in run order.
func Experiments() []*Experiment {
	return experiments
}

// Lookup returns the experiment called name, or nil.
func Lookup(name string) *Experiment {
	for _, e := range experiments {
		if e.Name == name {
			return e
		}
	}
	return nil
}
