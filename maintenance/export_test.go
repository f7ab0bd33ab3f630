package maintenance

// OnlyNotExistForTest exposes onlyNotExist to the external tests.
var OnlyNotExistForTest = onlyNotExist
