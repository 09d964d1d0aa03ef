package ext4

// LoadCorpusImage is loadCorpusImage for the package's external tests.
var LoadCorpusImage = loadCorpusImage

// SetDirHash is setDirHash for the package's external tests.
var SetDirHash = setDirHash
