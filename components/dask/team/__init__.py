"""A team of data scientists on one stack (``users``): each person's namespace and what they may
do and hold there (Role, quota, admission), their read-only volumes, the spec of their own Dask
clusters, and the reclaimer that ends clusters past their lifetime."""
