package charge

import "errors"

// Sentinel errors. Every error this package returns wraps one of them, so a
// caller tests with errors.Is and shows the message, which starts with
// "charge: " and then names the offending field or value.
var (
	// ErrUnknownPolicy: a charge policy name that is not one of the ten.
	ErrUnknownPolicy = errors.New("charge: unknown charge policy")
	// ErrUnknownExitState: a job end state that is not one of the known ones, or none.
	ErrUnknownExitState = errors.New("charge: unknown exit state")

	// ErrUnknownRateType: a rate type other than VBR, NBR, VBU, NBU, VBM, NBM, VBF, NBF.
	ErrUnknownRateType = errors.New("charge: unknown rate type")
	// ErrUnknownRateName: a rate on a resource or property the package does not
	// know, or one that makes no sense for its type (CPUTime scaled by time).
	ErrUnknownRateName = errors.New("charge: unknown rate name")
	// ErrBadInstance: a name-based rate without an instance, or a value-based one with one.
	ErrBadInstance = errors.New("charge: bad rate instance")
	// ErrDuplicateRate: two rates with the same type, name and instance.
	ErrDuplicateRate = errors.New("charge: duplicate rate")
	// ErrNegativeRate: a rate or multiplier below zero.
	ErrNegativeRate = errors.New("charge: negative rate")
	// ErrAbsurdRate: a rate or multiplier above MaxRate or with more than
	// MaxRatePlaces decimal places.
	ErrAbsurdRate = errors.New("charge: rate out of range")
	// ErrBadPrecision: a currency precision outside 0..MaxPrecision.
	ErrBadPrecision = errors.New("charge: bad currency precision")
	// ErrUnknownLocation: a rate table time zone that is not an IANA name.
	ErrUnknownLocation = errors.New("charge: unknown time zone")
	// ErrBadWindow: a time-of-day or day-of-week window that cannot be read.
	ErrBadWindow = errors.New("charge: bad time window")
	// ErrOverlappingWindows: two time-of-day windows share a minute, or two
	// day-of-week windows share a day.
	ErrOverlappingWindows = errors.New("charge: overlapping time windows")
	// ErrBadRateTable: rate table JSON that cannot be decoded.
	ErrBadRateTable = errors.New("charge: bad rate table")

	// ErrNegative: a negative resource count, size or duration.
	ErrNegative = errors.New("charge: negative value")
	// ErrAbsurd: a resource count, size or duration beyond the bounds
	// MaxCount, MaxMB and MaxSeconds.
	ErrAbsurd = errors.New("charge: value beyond bounds")
	// ErrBadLicense: a license with no name.
	ErrBadLicense = errors.New("charge: bad license")
	// ErrEndBeforeStart: a job that ended before it started.
	ErrEndBeforeStart = errors.New("charge: end before start")
	// ErrWallclockBeyondInterval: a wallclock longer than end minus start.
	ErrWallclockBeyondInterval = errors.New("charge: wallclock longer than start to end")
	// ErrNoStartTime: the rate table has time windows but the job has no start time.
	ErrNoStartTime = errors.New("charge: start time needed for time-of-day rates")
	// ErrNoWallclockLimit: a quote, or DEBITREQUESTEDWC, without a wallclock limit.
	ErrNoWallclockLimit = errors.New("charge: wallclock limit needed")
	// ErrNoShape: a PE, BLOCKED or NODE policy on a machine whose node shape has no cores.
	ErrNoShape = errors.New("charge: machine node shape needed")
	// ErrUnknownInstance: a job property value (a QOS, a partition, a licence)
	// that the rate table prices for other values but not for this one, and
	// the table has no "*" rate for that property.
	ErrUnknownInstance = errors.New("charge: value not in rate table")

	// ErrBadQuote: a guaranteed quote made with no uses or an expiry not after its creation.
	ErrBadQuote = errors.New("charge: bad guaranteed quote")
	// ErrQuoteExpired: a guaranteed quote used at or after its expiry.
	ErrQuoteExpired = errors.New("charge: guaranteed quote expired")
	// ErrQuoteUsedUp: a guaranteed quote used more times than it allows.
	ErrQuoteUsedUp = errors.New("charge: guaranteed quote used up")
)
