k
e
