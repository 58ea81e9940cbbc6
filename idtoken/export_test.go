package idtoken

// Fits is fits, for the external tests.
var Fits = fits
