package maintenance

// OnlyNotExistForTest exposes onlyNotExist to the external tests.
var OnlyNotExistForTest = onlyNotExist

// RunLocksForTest is the number of tables s keeps a run lock for.
func (s *Scheduler) RunLocksForTest() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.runLocks)
}
