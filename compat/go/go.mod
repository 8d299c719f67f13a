module herald.test/compat/go

go 1.19

require github.com/resend/resend-go/v3 v3.12.0
