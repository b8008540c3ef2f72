// The one source of the precompiled-header targets (kiln_test_pch, kiln_doc_pch): they exist to
// build the header that the test files and doc examples reuse.
